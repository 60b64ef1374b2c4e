package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Random;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Runs on a machine with an NVIDIA GPU (scripts/device/run-gpu-tests.sh on the lent H200);
 * skipped, saying why, where there is no CUDA driver.
 */
class ReduceKernelsTest {
  private static CudaModule module;
  private static ReduceKernels reducer;
  private static final List<String> TYPES = List.of("f32", "f64", "f16", "bf16", "i32", "i64",
      "u8");
  private static final List<String> OPS = List.of("sum", "prod", "min", "max", "avg");

  @BeforeAll
  static void gpu() throws Exception {
    try {
      module = new CudaModule(0);
      reducer = new ReduceKernels(module);
    } catch (Throwable t) {
      Assumptions.assumeTrue(false, "no usable GPU here: " + t);
    }
  }

  @AfterAll
  static void release() {
    if (module != null) {
      module.close();
    }
  }

  static int size(String t) {
    return switch (t) {
      case "f32", "i32" -> 4;
      case "f64", "i64" -> 8;
      case "f16", "bf16" -> 2;
      default -> 1;
    };
  }

  /** A random value for (type, op), encoded into b at i; returns the exact value. */
  static double put(ByteBuffer b, int i, String t, String op, Random r) {
    boolean prod = op.equals("prod");
    switch (t) {
      case "f32": {
        float v = (float) ((prod ? 0.9 + 0.2 * r.nextDouble() : 0.5 + 1.5 * r.nextDouble())
            * (prod || r.nextBoolean() ? 1 : -1));
        b.putFloat(i * 4, v);
        return v;
      }
      case "f64": {
        double v = (prod ? 0.9 + 0.2 * r.nextDouble() : 0.5 + 1.5 * r.nextDouble())
            * (prod || r.nextBoolean() ? 1 : -1);
        b.putDouble(i * 8, v);
        return v;
      }
      case "f16": { // exponent 14 or 15: [0.5, 2), any mantissa; sign random unless prod
        int bits = ((prod ? 14 + r.nextInt(2) : 14 + r.nextInt(2)) << 10) | r.nextInt(1024);
        if (prod) {
          bits = (15 << 10) | r.nextInt(100); // [1, 1.1)
        }
        if (!prod && r.nextBoolean()) {
          bits |= 0x8000;
        }
        b.putShort(i * 2, (short) bits);
        return half(bits);
      }
      case "bf16": {
        int bits = prod ? (0x3F80 | r.nextInt(16)) : (0x3F00 | r.nextInt(256));
        if (!prod && r.nextBoolean()) {
          bits |= 0x8000;
        }
        b.putShort(i * 2, (short) bits);
        return Float.intBitsToFloat(bits << 16);
      }
      case "i32": {
        int v = prod ? r.nextInt(5) + 2 : r.nextInt();
        b.putInt(i * 4, v);
        return v;
      }
      case "i64": {
        long v = prod ? r.nextInt(5) + 2 : r.nextLong() >> 12;
        b.putLong(i * 8, v);
        return v;
      }
      default: {
        int v = prod ? 2 + r.nextInt(3) : 2 + r.nextInt(250);
        b.put(i, (byte) v);
        return v;
      }
    }
  }

  static double half(int bits) {
    int e = (bits >>> 10) & 0x1F;
    int m = bits & 0x3FF;
    double v = e == 0 ? m * Math.pow(2, -24) : (1 + m / 1024.0) * Math.pow(2, e - 15);
    return (bits & 0x8000) != 0 ? -v : v;
  }

  static double get(ByteBuffer b, int i, String t) {
    return switch (t) {
      case "f32" -> b.getFloat(i * 4);
      case "f64" -> b.getDouble(i * 8);
      case "f16" -> half(b.getShort(i * 2) & 0xFFFF);
      case "bf16" -> Float.intBitsToFloat((b.getShort(i * 2) & 0xFFFF) << 16);
      case "i32" -> b.getInt(i * 4);
      case "i64" -> b.getLong(i * 8);
      default -> b.get(i) & 0xFF;
    };
  }

  @Test
  void everyTypeAndOpMatchesTheFloat64ReferenceOnOddSizes() {
    Random r = new Random(11);
    int checked = 0;
    for (String t : TYPES) {
      for (String op : OPS) {
        for (int n : new int[] {1, 2, 3, 8}) {
          for (int count : new int[] {1, 7, 1021, (1 << 20) + 3}) {
            int es = size(t);
            ByteBuffer[] host = new ByteBuffer[n];
            double[][] vals = new double[n][count];
            CUdeviceptr[] dev = new CUdeviceptr[n];
            for (int k = 0; k < n; k++) {
              host[k] = ByteBuffer.allocateDirect(count * es).order(ByteOrder.nativeOrder());
              for (int i = 0; i < count; i++) {
                vals[k][i] = put(host[k], i, t, op, r);
              }
              dev[k] = new CUdeviceptr();
              cuMemAlloc(dev[k], (long) count * es);
              cuMemcpyHtoD(dev[k], Pointer.to(host[k]), (long) count * es);
            }
            CUdeviceptr out = new CUdeviceptr();
            cuMemAlloc(out, (long) count * es);
            boolean avg = op.equals("avg");
            reducer.reduce(t, avg ? "sum" : op, dev, n, out, count, avg, n, null);
            ByteBuffer res = ByteBuffer.allocateDirect(count * es).order(ByteOrder.nativeOrder());
            cuCtxSynchronize();
            cuMemcpyDtoH(Pointer.to(res), out, (long) count * es);
            for (int i = 0; i < count; i++) {
              double ref = vals[0][i];
              double mag = Math.abs(ref);
              for (int k = 1; k < n; k++) {
                double v = vals[k][i];
                mag += Math.abs(v);
                ref = switch (op) {
                  case "prod" -> ref * v;
                  case "min" -> Math.min(ref, v);
                  case "max" -> Math.max(ref, v);
                  default -> ref + v;
                };
              }
              double got = get(res, i, t);
              String what = t + " " + op + " n=" + n + " count=" + count + " element " + i;
              if (t.startsWith("i") || t.equals("u8")) {
                long exact = (long) vals[0][i];
                for (int k = 1; k < n; k++) {
                  long v = (long) vals[k][i];
                  exact = switch (op) {
                    case "prod" -> exact * v;
                    case "min" -> Math.min(exact, v);
                    case "max" -> Math.max(exact, v);
                    default -> exact + v;
                  };
                }
                exact = t.equals("i32") ? (int) exact : t.equals("u8") ? exact & 0xFF : exact;
                if (avg) {
                  exact = t.equals("i32") ? (int) exact / n : exact / n;
                }
                long gotExact = switch (t) { // not through a double: i64 sums pass 2^53
                  case "i32" -> res.getInt(i * 4);
                  case "i64" -> res.getLong(i * 8);
                  default -> res.get(i) & 0xFF;
                };
                assertEquals(exact, gotExact, what);
              } else {
                if (avg) {
                  ref /= n;
                  mag /= n;
                }
                double eps = switch (t) {
                  case "f32" -> 0x1p-23;
                  case "f64" -> 0x1p-52;
                  case "f16" -> 0x1p-10;
                  default -> 0x1p-7;
                };
                double tol = op.equals("min") || op.equals("max") ? 0
                    : (n + 1) * eps * (op.equals("prod") ? Math.abs(ref) : mag);
                assertTrue(Math.abs(got - ref) <= tol, what + ": " + got + " vs " + ref);
              }
              checked++;
            }
            for (CUdeviceptr d : dev) {
              cuMemFree(d);
            }
            cuMemFree(out);
          }
        }
      }
    }
    System.out.println("device reducers: " + checked + " elements checked against float64");
  }

  @Test
  void reduceBandwidthNextToTheDeviceCopyOfTheSameRun() {
    long bytes = 256L << 20;
    CUdeviceptr[] in = new CUdeviceptr[8];
    for (int k = 0; k < in.length; k++) {
      in[k] = new CUdeviceptr();
      cuMemAlloc(in[k], bytes);
      JCudaDriver.cuMemsetD32(in[k], 0x3f800000, bytes / 4);
    }
    CUdeviceptr out = new CUdeviceptr();
    cuMemAlloc(out, bytes);
    CUevent a = new CUevent();
    CUevent b = new CUevent();
    JCudaDriver.cuEventCreate(a, 0);
    JCudaDriver.cuEventCreate(b, 0);
    float[] ms = new float[1];
    int reps = 20;
    JCudaDriver.cuEventRecord(a, null);
    for (int i = 0; i < reps; i++) {
      JCudaDriver.cuMemcpyDtoDAsync(out, in[0], bytes, null);
    }
    JCudaDriver.cuEventRecord(b, null);
    JCudaDriver.cuEventSynchronize(b);
    JCudaDriver.cuEventElapsedTime(ms, a, b);
    double copy = 2.0 * bytes * reps / (ms[0] / 1e3) / 1e9;
    StringBuilder line = new StringBuilder(String.format("H200 256 MiB: device copy %.0f GB/s "
        + "(read + write)", copy));
    for (String t : List.of("f32", "bf16")) {
      for (int n : new int[] {2, 4, 8}) {
        long count = bytes / size(t);
        reducer.reduce(t, "sum", in, n, out, count, false, n, null); // warm-up
        JCudaDriver.cuEventRecord(a, null);
        for (int i = 0; i < reps; i++) {
          reducer.reduce(t, "sum", in, n, out, count, false, n, null);
        }
        JCudaDriver.cuEventRecord(b, null);
        JCudaDriver.cuEventSynchronize(b);
        JCudaDriver.cuEventElapsedTime(ms, a, b);
        double bw = (n + 1.0) * bytes * reps / (ms[0] / 1e3) / 1e9;
        line.append(String.format("; %s x%d reduce %.0f GB/s (%.2fx copy)", t, n, bw, bw / copy));
      }
    }
    System.out.println(line);
    for (CUdeviceptr d : in) {
      cuMemFree(d);
    }
    cuMemFree(out);
    assertTrue(copy > 0);
  }
}
