package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/**
 * The one owner of a rank's CUDA context and of the kernels' module: retains the device's
 * primary context (shared with the rest of the process), makes it current on the constructing
 * thread, and loads the fatbin the build put in the jar ({@code cuModuleLoadData}). The launcher
 * classes ({@link ReduceKernels}, {@link CopyKernels}, {@link FlagKernels},
 * {@link TrainingKernels}) look their functions up here; they hold no context of their own, so
 * closing this module is what releases the GPU state of a rank.
 */
public final class CudaModule implements AutoCloseable {
  public static final String FATBIN = "/io/treeline/kernels/treeline.fatbin";
  /** The wgmma GEMM (gemm_sm90.cu), sm_90a only: loaded on compute capability 9.0. */
  public static final String HOPPER_CUBIN = "/io/treeline/kernels/treeline_sm90a.cubin";

  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUmodule module = new CUmodule();
  /** The sm_90a module, or null: not a 9.0 device, no cubin in the jar, or its load failed. */
  private final CUmodule hopper;
  private final String hopperAbsent;
  private final int ordinal;
  private final int smCount;
  private boolean closed;

  /**
   * Retains the primary context of CUDA device {@code ordinal}, makes it current on this thread
   * and loads the kernels. Throws where there is no driver (IllegalStateException saying why),
   * no such device (CudaException) or no fatbin (IOException); callers fall back to the host
   * path.
   */
  public CudaModule(int ordinal) throws IOException {
    String noDriver = GpuDevices.initDriver(); // the reason, also after a first failed load
    if (noDriver != null) {
      throw new IllegalStateException(noDriver);
    }
    byte[] image = fatbin();
    this.ordinal = ordinal;
    cuDeviceGet(device, ordinal);
    cuDevicePrimaryCtxRetain(context, device);
    try {
      cuCtxSetCurrent(context);
      cuModuleLoadData(module, image);
    } catch (RuntimeException e) {
      cuDevicePrimaryCtxRelease(device);
      throw e;
    }
    int[] sms = new int[1];
    JCudaDriver.cuDeviceGetAttribute(sms,
        CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    smCount = sms[0];
    int[] major = new int[1];
    int[] minor = new int[1];
    JCudaDriver.cuDeviceGetAttribute(major,
        CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    JCudaDriver.cuDeviceGetAttribute(minor,
        CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    CUmodule h = null;
    String absent = null;
    if (major[0] != 9 || minor[0] != 0) {
      absent = "compute capability " + major[0] + "." + minor[0] + " is not 9.0";
    } else {
      byte[] cubin = resource(HOPPER_CUBIN);
      if (cubin == null) {
        absent = HOPPER_CUBIN + " is not in the jar";
      } else {
        try {
          CUmodule m = new CUmodule();
          cuModuleLoadData(m, cubin);
          h = m;
        } catch (RuntimeException e) {
          absent = "loading " + HOPPER_CUBIN + " failed: " + e.getMessage();
        }
      }
    }
    hopper = h;
    hopperAbsent = absent;
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = CudaModule.class.getResourceAsStream(name)) {
      return in == null ? null : in.readAllBytes();
    }
  }

  /** The fatbin bytes, or an IOException saying that this jar was built without nvcc. */
  public static byte[] fatbin() throws IOException {
    try (InputStream in = CudaModule.class.getResourceAsStream(FATBIN)) {
      if (in == null) {
        throw new IOException(FATBIN + " is not in the jar: it was built without nvcc, so it "
            + "has no GPU path (install the CUDA toolkit, or set CUDA_HOME, and rebuild)");
      }
      return in.readAllBytes();
    }
  }

  /** The kernel {@code name} of the module (its {@code extern "C"} name in treeline.cu). */
  public CUfunction function(String name) {
    if (closed) {
      throw new IllegalStateException("CUDA module of device " + ordinal + " is closed");
    }
    CUfunction f = new CUfunction();
    cuModuleGetFunction(f, module, name);
    return f;
  }

  /**
   * The kernel {@code name} of the sm_90a module (its {@code extern "C"} name in gemm_sm90.cu),
   * or null where that module is not loaded ({@link #hopperAbsent} says why).
   */
  public CUfunction hopperFunction(String name) {
    if (closed) {
      throw new IllegalStateException("CUDA module of device " + ordinal + " is closed");
    }
    if (hopper == null) {
      return null;
    }
    CUfunction f = new CUfunction();
    cuModuleGetFunction(f, hopper, name);
    return f;
  }

  /** Why the sm_90a module is not loaded, or null when it is. */
  public String hopperAbsent() {
    return hopperAbsent;
  }

  /** Blocks of {@code f} at {@code threads} per block that fit the whole GPU at once. */
  public int residentBlocks(CUfunction f, int threads, int sharedBytes) {
    int[] perSm = new int[1];
    JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(perSm, f, threads, sharedBytes);
    return Math.max(1, perSm[0]) * smCount;
  }

  /** Makes this module's context current on the calling thread. */
  public void makeCurrent() {
    cuCtxSetCurrent(context);
  }

  public CUcontext context() {
    return context;
  }

  public CUdevice device() {
    return device;
  }

  public int ordinal() {
    return ordinal;
  }

  public int smCount() {
    return smCount;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (hopper != null) {
      cuModuleUnload(hopper);
    }
    cuModuleUnload(module);
    cuDevicePrimaryCtxRelease(device);
  }
}
