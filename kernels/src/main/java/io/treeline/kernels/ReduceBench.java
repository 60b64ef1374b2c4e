package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD32;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;

/**
 * The N-input reduce kernel's bandwidth next to the device-to-device copy of the same run:
 * bytes read + written per second, for N = 2, 4, 8 distinct input buffers, f32 and bf16, at
 * 64 MiB and 1 GiB per buffer; median of timed repetitions measured with CUDA events. Prints a
 * table and writes CSV ({@code java ... io.treeline.kernels.ReduceBench [out.csv]}).
 */
public final class ReduceBench {
  private ReduceBench() {
  }

  public static void main(String[] args) throws IOException {
    Path csv = Path.of(args.length > 0 ? args[0] : "reduce-bench.csv");
    long[] sizes = {64L << 20, 1L << 30};
    int[] inputs = {2, 4, 8};
    // grid shapes to compare (waves of resident blocks): "1,2,4" as the second argument
    int[] waves = args.length > 1 ? java.util.Arrays.stream(args[1].split(","))
        .mapToInt(Integer::parseInt).toArray() : new int[] {1};
    List<String> rows = new ArrayList<>();
    rows.add("bytes,kernel,type,inputs,ms,gbps,ratio_to_copy");
    PrintStream out = System.out;
    try (CudaModule module = new CudaModule(0)) {
      ReduceKernels k = new ReduceKernels(module);
      CUdeviceptr[] in = new CUdeviceptr[8];
      long[] addr = new long[8];
      long most = sizes[sizes.length - 1];
      for (int i = 0; i < in.length; i++) {
        in[i] = new CUdeviceptr();
        cuMemAlloc(in[i], most);
        cuMemsetD32(in[i], Float.floatToIntBits(1f + i), most / 4);
        addr[i] = DevicePointers.address(in[i]);
      }
      CUdeviceptr dst = new CUdeviceptr();
      cuMemAlloc(dst, most);
      long dstAddr = DevicePointers.address(dst);
      CUevent a = new CUevent();
      CUevent b = new CUevent();
      cuEventCreate(a, 0);
      cuEventCreate(b, 0);
      out.printf("%12s %-8s %-5s %6s %10s %10s %8s%n", "bytes", "kernel", "type", "inputs",
          "time(ms)", "GB/s", "x copy");
      for (long bytes : sizes) {
        int reps = bytes >= (1L << 30) ? 10 : 40;
        double copyMs = median(reps, a, b, () -> cuMemcpyDtoDAsync(dst, in[0], bytes, null));
        double copy = 2.0 * bytes / (copyMs / 1e3) / 1e9;
        out.printf("%12d %-8s %-5s %6d %10.3f %10.0f %8.2f%n", bytes, "copy", "-", 1, copyMs,
            copy, 1.0);
        rows.add(bytes + ",copy,-,1," + copyMs + "," + copy + ",1.0");
        for (String type : new String[] {"f32", "bf16"}) {
          int kernel = ReduceKernels.kernel(type, "sum");
          long count = bytes / ReduceKernels.elementSize(kernel);
          for (int n : inputs) {
            for (int w : waves) {
              k.gridWaves(w);
              double ms = median(reps, a, b, () -> k.reduce(kernel, dstAddr, addr, n, count,
                  false, n, null));
              double bw = (n + 1.0) * bytes / (ms / 1e3) / 1e9;
              String name = waves.length == 1 ? "reduce" : "reduce/w" + w;
              out.printf("%12d %-8s %-5s %6d %10.3f %10.0f %8.2f%n", bytes, name, type, n, ms,
                  bw, bw / copy);
              rows.add(bytes + "," + name + "," + type + "," + n + "," + ms + "," + bw + ","
                  + bw / copy);
            }
            k.gridWaves(1);
          }
        }
      }
      for (CUdeviceptr p : in) {
        cuMemFree(p);
      }
      cuMemFree(dst);
    }
    Files.write(csv, rows);
    out.println("wrote " + csv);
  }

  /** Median milliseconds of {@code reps} single launches, each timed by a pair of events. */
  private static double median(int reps, CUevent a, CUevent b, Runnable launch) {
    launch.run(); // warm-up
    double[] ms = new double[reps];
    float[] t = new float[1];
    for (int i = 0; i < reps; i++) {
      cuEventRecord(a, null);
      launch.run();
      cuEventRecord(b, null);
      cuEventSynchronize(b);
      cuEventElapsedTime(t, a, b);
      ms[i] = t[0];
    }
    java.util.Arrays.sort(ms);
    return ms[reps / 2];
  }
}
