package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Locale;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * The kernels of {@code src/main/cuda} (reducers, the segment copy, the flag barrier), loaded
 * from the fatbin the build put in the jar ({@code cuModuleLoadData}) through JCuda's driver API.
 *
 * <p>Launches take device addresses as {@code long}s ({@link DevicePointers}) and write them
 * into argument arrays prepared once, so that a launch allocates nothing. Types and ops are
 * named as the kernels are ("f32", "bf16", ..., "sum", "prod", "min", "max"); AVG is "sum"
 * with {@code finish} and the divisor. One instance per rank thread (the argument arrays are
 * its own); the context is the device's primary context, shared with the rest of the process.
 */
public final class DeviceReducer implements AutoCloseable {
  public static final String FATBIN = "/io/treeline/kernels/treeline.fatbin";
  /** Inputs of one reduce launch and segments of one copy launch (MAX_INPUTS in common.cuh). */
  public static final int MAX_INPUTS = 8;
  public static final List<String> TYPES = List.of("f32", "f64", "f16", "bf16", "i32", "i64",
      "u8");
  public static final List<String> OPS = List.of("sum", "prod", "min", "max");
  private static final int[] SIZES = {4, 8, 2, 2, 4, 8, 1};
  private static final int THREADS = 256;
  private static final int VPT = 2; // vectors per thread per step, as in reduce.cuh

  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUmodule module = new CUmodule();
  private final CUfunction[] reducers = new CUfunction[TYPES.size() * OPS.size()];
  private final CUfunction copySegments = new CUfunction();
  private final CUfunction barrierFlags = new CUfunction();
  private final int ordinal;
  private final int smCount;
  private final int maxBlocks;
  /** Blocks of each reducer that fit the GPU at once (occupancy x SMs): one wave, no tail. */
  private final int[] residentBlocks = new int[TYPES.size() * OPS.size()];
  private int waves = 1;
  private boolean closed;

  // reduce_T_OP(T* dst, Ptrs in, int n, long long count, int vec, int finish, int divisor)
  private final long[] rDst = new long[1];
  private final long[] rIn = new long[MAX_INPUTS];
  private final int[] rN = new int[1];
  private final long[] rCount = new long[1];
  private final int[] rVec = new int[1];
  private final int[] rFinish = new int[1];
  private final int[] rDivisor = new int[1];
  private final Pointer reduceArgs = Pointer.to(Pointer.to(rDst), Pointer.to(rIn),
      Pointer.to(rN), Pointer.to(rCount), Pointer.to(rVec), Pointer.to(rFinish),
      Pointer.to(rDivisor));
  // copy_segments(Segs s): src[8], dst[8], bytes[8] in one 192-byte parameter
  private final long[] segs = new long[3 * MAX_INPUTS];
  private final Pointer copyArgs = Pointer.to(Pointer.to(segs));
  // barrier_flags(Ptrs flags, int n, int me, u64 value, long long timeoutNs, u64* status)
  private final long[] bFlags = new long[MAX_INPUTS];
  private final int[] bN = new int[1];
  private final int[] bMe = new int[1];
  private final long[] bValue = new long[1];
  private final long[] bTimeout = new long[1];
  private final long[] bStatus = new long[1];
  private final Pointer barrierArgs = Pointer.to(Pointer.to(bFlags), Pointer.to(bN),
      Pointer.to(bMe), Pointer.to(bValue), Pointer.to(bTimeout), Pointer.to(bStatus));

  /**
   * Retains the primary context of CUDA device {@code ordinal}, makes it current on this thread
   * and loads the kernels. Throws where there is no driver (IllegalStateException saying why),
   * no such device (CudaException) or no fatbin (IOException); callers fall back to the host
   * path.
   */
  public DeviceReducer(int ordinal) throws IOException {
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
      for (int t = 0; t < TYPES.size(); t++) {
        for (int o = 0; o < OPS.size(); o++) {
          CUfunction f = new CUfunction();
          cuModuleGetFunction(f, module, "reduce_" + TYPES.get(t) + "_" + OPS.get(o));
          reducers[t * OPS.size() + o] = f;
        }
      }
      cuModuleGetFunction(copySegments, module, "copy_segments");
      cuModuleGetFunction(barrierFlags, module, "barrier_flags");
    } catch (RuntimeException e) {
      cuDevicePrimaryCtxRelease(device);
      throw e;
    }
    int[] sms = new int[1];
    JCudaDriver.cuDeviceGetAttribute(sms, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        device);
    smCount = sms[0];
    maxBlocks = smCount * 4;
    int[] perSm = new int[1];
    for (int i = 0; i < reducers.length; i++) {
      JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(perSm, reducers[i], THREADS, 0);
      residentBlocks[i] = Math.max(1, perSm[0]) * smCount;
    }
  }

  /**
   * Grid size of the reducers in waves of resident blocks (default 1: every block resident, each
   * striding over the data). For benchmarks that compare grid shapes.
   */
  public void gridWaves(int w) {
    waves = Math.max(1, w);
  }

  /** The fatbin bytes, or an IOException saying that this jar was built without nvcc. */
  public static byte[] fatbin() throws IOException {
    try (InputStream in = DeviceReducer.class.getResourceAsStream(FATBIN)) {
      if (in == null) {
        throw new IOException(FATBIN + " is not in the jar: it was built without nvcc, so it "
            + "has no GPU path (install the CUDA toolkit, or set CUDA_HOME, and rebuild)");
      }
      return in.readAllBytes();
    }
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

  /** The handle {@link #reduce(int, long, long[], int, long, boolean, int, CUstream)} takes. */
  public static int kernel(String type, String op) {
    int t = TYPES.indexOf(type.toLowerCase(Locale.ROOT));
    String o = op.toLowerCase(Locale.ROOT);
    if (o.equals("avg")) {
      o = "sum";
    }
    int k = OPS.indexOf(o);
    if (t < 0 || k < 0) {
      throw new IllegalArgumentException("no device reducer for " + type + " x " + op
          + "; types " + TYPES + ", ops " + OPS + " and avg");
    }
    return t * OPS.size() + k;
  }

  /** Bytes per element of the reducer {@code kernel}. */
  public static int elementSize(int kernel) {
    return SIZES[kernel / OPS.size()];
  }

  /**
   * Enqueues {@code dst = src[0] op src[1] ... op src[n-1]} over {@code count} elements on
   * {@code stream}. Uses 16-byte vectors for everything but the last few elements when every
   * address is 16-byte aligned. Allocates nothing.
   */
  public void reduce(int kernel, long dst, long[] src, int n, long count, boolean finish,
      int divisor, CUstream stream) {
    if (n < 1 || n > MAX_INPUTS) {
      throw new IllegalArgumentException("1.." + MAX_INPUTS + " inputs, got " + n);
    }
    if (count <= 0) {
      return;
    }
    long align = dst;
    for (int k = 0; k < n; k++) {
      rIn[k] = src[k];
      align |= src[k];
    }
    for (int k = n; k < MAX_INPUTS; k++) {
      rIn[k] = 0;
    }
    int size = elementSize(kernel);
    boolean vec = (align & 15) == 0;
    long work = vec ? Math.max(1, count * size / 16 / VPT) : count;
    int blocks = (int) Math.max(1, Math.min((long) residentBlocks[kernel] * waves,
        (work + THREADS - 1) / THREADS));
    rDst[0] = dst;
    rN[0] = n;
    rCount[0] = count;
    rVec[0] = vec ? 1 : 0;
    rFinish[0] = finish ? 1 : 0;
    rDivisor[0] = divisor;
    cuLaunchKernel(reducers[kernel], blocks, 1, 1, THREADS, 1, 1, 0, stream, reduceArgs, null);
  }

  /** The same, with JCuda pointers (tests and one-off use; allocates). */
  public void reduce(String type, String op, CUdeviceptr[] src, int n, CUdeviceptr dst,
      long count, boolean finish, int divisor, CUstream stream) {
    long[] a = new long[n];
    for (int k = 0; k < n; k++) {
      a[k] = DevicePointers.address(src[k]);
    }
    reduce(kernel(type, op), DevicePointers.address(dst), a, n, count, finish, divisor, stream);
  }

  /**
   * Enqueues {@code n} copies (dst[k] = src[k], bytes[k] bytes each, 1..MAX_INPUTS) as one
   * launch. Allocates nothing.
   */
  public void copy(long[] src, long[] dst, long[] bytes, int n, CUstream stream) {
    if (n < 1 || n > MAX_INPUTS) {
      throw new IllegalArgumentException("1.." + MAX_INPUTS + " segments, got " + n);
    }
    long most = 0;
    for (int k = 0; k < MAX_INPUTS; k++) {
      boolean used = k < n;
      segs[k] = used ? src[k] : 0;
      segs[MAX_INPUTS + k] = used ? dst[k] : 0;
      segs[2 * MAX_INPUTS + k] = used ? bytes[k] : 0;
      if (used) {
        most = Math.max(most, bytes[k]);
      }
    }
    if (most == 0) {
      return;
    }
    long work = Math.max(1, most / 16 / 4);
    int blocks = (int) Math.max(1, Math.min(Math.max(1, maxBlocks / n),
        (work + THREADS - 1) / THREADS));
    cuLaunchKernel(copySegments, blocks, n, 1, THREADS, 1, 1, 0, stream, copyArgs, null);
  }

  /**
   * Enqueues the flag barrier of {@code peer.cuh}: rank {@code me} of {@code n} publishes
   * {@code value} to every peer's flag array and waits for theirs, at most {@code timeoutNs};
   * a wait that gives up writes (peer + 1, value) to the two words at {@code status}.
   */
  public void barrier(long[] flags, int n, int me, long value, long timeoutNs, long status,
      CUstream stream) {
    System.arraycopy(flags, 0, bFlags, 0, n);
    bN[0] = n;
    bMe[0] = me;
    bValue[0] = value;
    bTimeout[0] = timeoutNs;
    bStatus[0] = status;
    cuLaunchKernel(barrierFlags, 1, 1, 1, 32, 1, 1, 0, stream, barrierArgs, null);
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
