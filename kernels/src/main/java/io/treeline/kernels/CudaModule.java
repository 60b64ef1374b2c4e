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

  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUmodule module = new CUmodule();
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
    cuModuleUnload(module);
    cuDevicePrimaryCtxRelease(device);
  }
}
