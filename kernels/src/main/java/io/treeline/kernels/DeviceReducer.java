package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;

import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * The device reducers of {@code src/main/cuda/reduce.cu}, loaded from the fatbin the build put
 * in the jar ({@code cuModuleLoadData}) through JCuda's driver API, and launched per type and
 * op: {@code dst = src[0] op ... op src[n-1]} over {@code count} elements.
 *
 * <p>Types and ops are named as the kernels are ("f32", "bf16", ..., "sum", "prod", "min",
 * "max"); AVG is "sum" with {@code finish} and the divisor. One instance per context and thread.
 */
public final class DeviceReducer implements AutoCloseable {
  public static final String FATBIN = "/io/treeline/kernels/treeline.fatbin";
  public static final int MAX_INPUTS = 8;
  private static final Map<String, Integer> SIZES = Map.of("f32", 4, "f64", 8, "f16", 2,
      "bf16", 2, "i32", 4, "i64", 8, "u8", 1);

  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUmodule module = new CUmodule();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private final CUdeviceptr inputTable = new CUdeviceptr();
  private final CUdeviceptr[] table = new CUdeviceptr[MAX_INPUTS];
  private final int threads = 256;
  private final int maxBlocks;

  /** Binds the primary context of CUDA device {@code ordinal} to this thread and loads the kernels. */
  public DeviceReducer(int ordinal) throws IOException {
    byte[] image = fatbin();
    JCudaDriver.setExceptionsEnabled(true);
    cuInit(0);
    cuDeviceGet(device, ordinal);
    cuDevicePrimaryCtxRetain(context, device);
    cuCtxSetCurrent(context);
    cuModuleLoadData(module, image);
    cuMemAlloc(inputTable, 8L * MAX_INPUTS);
    int[] sms = new int[1];
    JCudaDriver.cuDeviceGetAttribute(sms,
        jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    maxBlocks = sms[0] * 8;
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

  /**
   * Enqueues {@code dst = src[0] op src[1] ... } on {@code stream} (null: the default stream).
   * Uses 16-byte vectors when every pointer and the byte count allow it.
   */
  public void reduce(String type, String op, CUdeviceptr[] src, int n, CUdeviceptr dst,
      long count, boolean finish, int divisor, CUstream stream, boolean aligned) {
    if (n < 1 || n > MAX_INPUTS) {
      throw new IllegalArgumentException("1.." + MAX_INPUTS + " inputs, got " + n);
    }
    Integer size = SIZES.get(type);
    if (size == null) {
      throw new IllegalArgumentException("unknown type " + type + "; one of " + SIZES.keySet());
    }
    String name = "reduce_" + type + "_" + op.toLowerCase(Locale.ROOT);
    CUfunction f = functions.computeIfAbsent(name, k -> {
      CUfunction fn = new CUfunction();
      cuModuleGetFunction(fn, module, k);
      return fn;
    });
    System.arraycopy(src, 0, table, 0, n);
    NativePointerObject[] ptrs = new NativePointerObject[n];
    System.arraycopy(src, 0, ptrs, 0, n);
    cuMemcpyHtoDAsync(inputTable, Pointer.to(ptrs), 8L * n, stream);
    int vec = aligned && (count * size) % 16 == 0 ? 1 : 0;
    long work = vec == 1 ? count * size / 16 / 2 : count; // 2 vectors per thread and step
    int blocks = (int) Math.max(1, Math.min(maxBlocks, (work + threads - 1) / threads));
    Pointer params = Pointer.to(Pointer.to(dst), Pointer.to(inputTable),
        Pointer.to(new int[] {n}), Pointer.to(new long[] {count}), Pointer.to(new int[] {vec}),
        Pointer.to(new int[] {finish ? 1 : 0}), Pointer.to(new int[] {divisor}));
    cuLaunchKernel(f, blocks, 1, 1, threads, 1, 1, 0, stream, params, null);
  }

  @Override
  public void close() {
    cuMemFree(inputTable);
    cuModuleUnload(module);
    cuDevicePrimaryCtxRelease(device);
  }
}
