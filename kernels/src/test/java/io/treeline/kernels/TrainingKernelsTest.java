package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUdeviceptr;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every training kernel against a float64 host reference on random data of odd shapes. Runs on
 * a machine with an NVIDIA GPU (scripts/device/run-train-gpu.sh); skipped, saying why, without
 * a CUDA driver.
 */
class TrainingKernelsTest {
  private static CudaModule module;
  private static TrainingKernels k;
  private final List<CUdeviceptr> allocated = new ArrayList<>();

  @BeforeAll
  static void gpu() {
    try {
      module = new CudaModule(0);
      k = new TrainingKernels(module);
    } catch (Throwable t) {
      Assumptions.assumeTrue(false, "no usable GPU here: " + t);
    }
  }

  @AfterAll
  static void release() {
    if (k != null) {
      k.close();
    }
    if (module != null) {
      module.close();
    }
  }

  @AfterEach
  void free() {
    for (CUdeviceptr p : allocated) {
      cuMemFree(p);
    }
    allocated.clear();
  }

  private long up(float[] a) {
    CUdeviceptr p = alloc(Math.max(1, a.length) * (long) Sizeof.FLOAT);
    if (a.length > 0) {
      cuMemcpyHtoD(p, Pointer.to(a), a.length * (long) Sizeof.FLOAT);
    }
    return DevicePointers.address(p);
  }

  private long up(byte[] a) {
    CUdeviceptr p = alloc(Math.max(1, a.length));
    cuMemcpyHtoD(p, Pointer.to(a), a.length);
    return DevicePointers.address(p);
  }

  private long up(int[] a) {
    CUdeviceptr p = alloc(Math.max(1, a.length) * 4L);
    cuMemcpyHtoD(p, Pointer.to(a), a.length * 4L);
    return DevicePointers.address(p);
  }

  private CUdeviceptr alloc(long bytes) {
    CUdeviceptr p = new CUdeviceptr();
    cuMemAlloc(p, bytes);
    allocated.add(p);
    return p;
  }

  private static float[] down(long address, int n) {
    float[] a = new float[n];
    cuCtxSynchronize();
    if (n > 0) {
      cuMemcpyDtoH(Pointer.to(a), DevicePointers.at(address), n * (long) Sizeof.FLOAT);
    }
    return a;
  }

  private static float[] random(Random r, int n, float scale) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) {
      a[i] = (float) (r.nextGaussian() * scale);
    }
    return a;
  }

  /**
   * TF32 keeps 10 of f32's 23 mantissa bits: each input is rounded with relative error at most
   * 2^-11, so each product is within 2^-10 of its exact value relative to |a||b|; the f32 sum of
   * k terms adds at most k 2^-24 of the sum of magnitudes. ReLU and the mask are 1-Lipschitz /
   * exact, so the same bound holds after the epilogue.
   */
  static double tf32Tolerance(double magnitude, int k) {
    return (Math.scalb(1.0, -10) + k * Math.scalb(1.0, -24)) * magnitude + 1e-6;
  }

  private static int pad(int rows, boolean aligned) {
    return aligned ? (rows + 4) / 4 * 4 : rows + 3;
  }

  @Test
  void gemmOfEveryLayoutAndOddShapeMatchesTheFloat64Product() {
    // the last three pick the 128 x 128 tiles on an H200 (132 SMs) and split-K; with
    // leading dimensions padded to multiples of 4 the tiles load with 16-byte copies
    int[][] shapes = {{1, 1, 1}, {7, 33, 257}, {33, 7, 784}, {257, 10, 128}, {64, 64, 16},
        {1, 257, 7}, {65, 129, 63}, {5, 3, 0}, {128, 256, 784}, {1031, 1291, 37},
        {1024, 1280, 64}, {130, 70, 3001}};
    Random r = new Random(14);
    int checked = 0;
    for (int[] s : shapes) {
      int m = s[0];
      int n = s[1];
      int kk = s[2];
      for (int variant = 0; variant < 8; variant++) {
        int layout = variant & 3;
        boolean ta = (layout & 1) != 0;
        boolean tb = (layout & 2) != 0;
        boolean withBias = layout != 1;
        boolean relu = layout == 0 || layout == 3;
        boolean masked = layout == 2;
        // leading dimensions wider than the rows: strides are honoured; odd ones (variants
        // 0-3) load element by element, multiples of 4 (4-7) with 16-byte copies
        int lda = pad(ta ? m : kk, variant >= 4);
        int ldb = pad(tb ? kk : n, variant >= 4);
        int ldc = n + 1;
        float[] a = random(r, (ta ? kk : m) * lda, 1f);
        float[] b = random(r, (tb ? n : kk) * ldb, 1f);
        float[] bias = random(r, n, 1f);
        float[] mask = new float[m * n];
        for (int i = 0; i < mask.length; i++) {
          mask[i] = r.nextBoolean() ? r.nextFloat() + 0.01f : 0f;
        }
        long dc = up(new float[m * ldc]);
        k.gemm(up(a), ta, lda, up(b), tb, ldb, dc, ldc, m, n, kk, withBias ? up(bias) : 0, relu,
            masked ? up(mask) : 0, n, null);
        float[] c = down(dc, m * ldc);
        for (int i = 0; i < m; i++) {
          for (int j = 0; j < n; j++) {
            double ref = withBias ? bias[j] : 0;
            double mag = Math.abs(ref);
            for (int q = 0; q < kk; q++) {
              double av = ta ? a[q * lda + i] : a[i * lda + q];
              double bv = tb ? b[j * ldb + q] : b[q * ldb + j];
              ref += av * bv;
              mag += Math.abs(av * bv);
            }
            if (relu) {
              ref = Math.max(ref, 0);
            }
            if (masked && !(mask[i * n + j] > 0f)) {
              ref = 0;
            }
            double got = c[i * ldc + j];
            if (!(Math.abs(got - ref) <= tf32Tolerance(mag, kk))) {
              fail("C[" + i + "," + j + "] of " + m + "x" + n + "x" + kk + " transA " + ta
                  + " transB " + tb + ": " + got + " vs " + ref);
            }
            checked++;
          }
        }
      }
    }
    assertTrue(checked > 100_000, "checked " + checked);
  }

  /**
   * The wgmma kernels read each f32 input as TF32 by dropping its low 13 mantissa bits
   * (truncation, as cuBLAS's TF32 mode): relative error below 2^-10 an input, 2^-9 a product.
   */
  static double truncatedTf32Tolerance(double magnitude, int k) {
    return (Math.scalb(1.0, -9) + k * Math.scalb(1.0, -24)) * magnitude + 1e-6;
  }

  @Test
  void hopperGemmAtTheModelShapesAndOddTailsMatchesTheFloat64Product() {
    Assumptions.assumeTrue(k.hopperGemm(), "no wgmma path here: " + module.hopperAbsent());
    k.setTmaGemm(false);
    hopperProducts("wgmma");
  }

  @Test
  void tmaGemmAtTheModelShapesAndOddTailsMatchesTheFloat64Product() {
    Assumptions.assumeTrue(k.hopperGemm(), "no wgmma path here: " + module.hopperAbsent());
    // on a 9.0 device with the module and native access (the build's test JVMs have both) the
    // TMA kernels must load: an absent encoder there is a failure, not a skip
    assertTrue(k.setTmaGemm(true), "TMA kernels off: " + k.tmaAbsent());
    try {
      hopperProducts("tma");
      assertEquals("tma", k.gemmPath(), "a tensor map was refused: " + k.tmaAbsent());
    } finally {
      k.setTmaGemm(true);
    }
  }

  private void hopperProducts(String path) {
    assertEquals(path, k.gemmPath());
    // m, n, k, layout (transA + 2 transB), epilogue (0 none, 1 bias + ReLU, 2 bias + mask):
    // the 20M model's products (784-4096-4096-10 at batch 512), 4096^3 and odd tails of at
    // least HOPPER_MIN_WORK multiply-adds (rows, columns and K not multiples of the tiles)
    int[][] shapes = {{512, 4096, 784, 0, 1}, {512, 4096, 4096, 0, 1}, {4096, 4096, 512, 1, 0},
        {784, 4096, 512, 1, 0}, {512, 4096, 4096, 2, 2}, {4096, 4096, 4096, 0, 0},
        {127, 1021, 784, 0, 1}, {127, 1021, 784, 1, 0}, {127, 1021, 784, 2, 2},
        {127, 1021, 784, 3, 1}, {1021, 1021, 67, 3, 2}, {1031, 1291, 53, 1, 1},
        {1, 4096, 16411, 0, 1}, {4097, 13, 1261, 2, 0}, {130, 4099, 250, 0, 2}};
    Random r = new Random(90);
    int checked = 0;
    for (int[] s : shapes) {
      int m = s[0];
      int n = s[1];
      int kk = s[2];
      boolean ta = (s[3] & 1) != 0;
      boolean tb = (s[3] & 2) != 0;
      boolean withBias = s[4] != 0;
      boolean relu = s[4] == 1;
      boolean masked = s[4] == 2;
      int lda = (ta ? m : kk + 3) / 4 * 4 + (ta ? 4 : 0); // multiples of 4, wider than a row
      int ldb = (tb ? kk + 3 : n) / 4 * 4 + (tb ? 0 : 4);
      int ldc = n + 1;
      float[] a = random(r, (ta ? kk : m) * lda, 1f);
      float[] b = random(r, (tb ? n : kk) * ldb, 1f);
      float[] bias = random(r, n, 1f);
      float[] mask = new float[masked ? m * n : 0];
      for (int i = 0; i < mask.length; i++) {
        mask[i] = r.nextBoolean() ? 1f : 0f;
      }
      long da = up(a);
      long db = up(b);
      assertTrue(k.hopperPlan(da, ta, lda, db, tb, ldb, m, n, kk) != null,
          m + "x" + n + "x" + kk + " on the " + path + " path");
      long dc = up(new float[m * ldc]);
      long dbias = withBias ? up(bias) : 0;
      long dmask = masked ? up(mask) : 0;
      k.gemm(da, ta, lda, db, tb, ldb, dc, ldc, m, n, kk, dbias, relu, dmask, n, null);
      float[] c = down(dc, m * ldc);
      // the same launch again gives the same bits (no atomics, a fixed order)
      long dc2 = up(new float[m * ldc]);
      k.gemm(da, ta, lda, db, tb, ldb, dc2, ldc, m, n, kk, dbias, relu, dmask, n, null);
      float[] c2 = down(dc2, m * ldc);
      // every element where the product is small, else 3000 sampled with the edges
      boolean all = (long) m * n * kk <= 80_000_000L;
      int samples = all ? m * n : 3000;
      for (int q = 0; q < samples; q++) {
        int i;
        int j;
        if (all) {
          i = q / n;
          j = q % n;
        } else {
          i = q < 100 ? m - 1 - q % Math.min(m, 4) : r.nextInt(m);
          j = q >= 100 && q < 200 ? n - 1 - q % Math.min(n, 4) : r.nextInt(n);
        }
        double ref = withBias ? bias[j] : 0;
        double mag = Math.abs(ref);
        for (int p = 0; p < kk; p++) {
          double av = ta ? a[p * lda + i] : a[i * lda + p];
          double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
          ref += av * bv;
          mag += Math.abs(av * bv);
        }
        if (relu) {
          ref = Math.max(ref, 0);
        }
        if (masked && !(mask[i * n + j] > 0f)) {
          ref = 0;
        }
        double got = c[i * ldc + j];
        if (!(Math.abs(got - ref) <= truncatedTf32Tolerance(mag, kk))) {
          fail("C[" + i + "," + j + "] of " + m + "x" + n + "x" + kk + " transA " + ta
              + " transB " + tb + " on the " + path + " path: " + got + " vs " + ref);
        }
        if (Float.floatToRawIntBits(c[i * ldc + j]) != Float.floatToRawIntBits(c2[i * ldc + j])) {
          fail("C[" + i + "," + j + "] of " + m + "x" + n + "x" + kk + " differs between two "
              + "launches: " + c[i * ldc + j] + " vs " + c2[i * ldc + j]);
        }
        checked++;
      }
      free();
    }
    assertTrue(checked > 100_000, "checked " + checked);
  }

  @Test
  void columnSumsMatchTheFloat64Sums() {
    Random r = new Random(3);
    for (int[] s : new int[][] {{1, 1}, {257, 33}, {128, 10}, {0, 7}}) {
      int m = s[0];
      int n = s[1];
      int ld = n + 5;
      float[] x = random(r, m * ld, 1f);
      long out = up(new float[n]);
      k.columnSums(up(x), m, n, ld, out, null);
      float[] got = down(out, n);
      for (int j = 0; j < n; j++) {
        double ref = 0;
        double mag = 0;
        for (int i = 0; i < m; i++) {
          ref += x[i * ld + j];
          mag += Math.abs(x[i * ld + j]);
        }
        assertEquals(ref, got[j], m * Math.scalb(mag, -24) + 1e-7, "column " + j + " of " + m);
      }
    }
  }

  @Test
  void softmaxCrossEntropyGradientLossAndHitsMatchTheFloat64Reference() {
    Random r = new Random(5);
    for (int[] s : new int[][] {{1, 7}, {257, 10}, {128, 10}, {1000, 3}}) {
      int m = s[0];
      int c = s[1];
      float[] z = random(r, m * c, 3f);
      byte[] y = new byte[m];
      for (int i = 0; i < m; i++) {
        y[i] = (byte) r.nextInt(c);
      }
      float scale = 1f / m;
      long dz = up(new float[m * c]);
      long stats = up(new float[2]);
      k.softmaxCrossEntropy(up(z), up(y), m, c, dz, scale, stats, 1f / m, null);
      float[] g = down(dz, m * c);
      float[] st = down(stats, 2);
      double loss = 0;
      int hits = 0;
      for (int i = 0; i < m; i++) {
        double mx = Double.NEGATIVE_INFINITY;
        int arg = 0;
        for (int j = 0; j < c; j++) {
          if (z[i * c + j] > mx) {
            mx = z[i * c + j];
            arg = j;
          }
        }
        double sum = 0;
        for (int j = 0; j < c; j++) {
          sum += Math.exp(z[i * c + j] - mx);
        }
        loss += Math.log(sum) - (z[i * c + y[i]] - mx);
        hits += arg == y[i] ? 1 : 0;
        for (int j = 0; j < c; j++) {
          double ref = (Math.exp(z[i * c + j] - mx) / sum - (j == y[i] ? 1 : 0)) * scale;
          // __expf is within a few ulp for arguments this size: 1e-5 of a probability
          assertEquals(ref, g[i * c + j], 1e-5 * scale, "dZ[" + i + "," + j + "]");
        }
      }
      assertEquals(loss / m, st[0], 1e-5 * Math.max(1, loss / m), "mean loss of " + m);
      assertEquals(hits, st[1], 0.0, "hits of " + m);
    }
  }

  @Test
  void sgdWithMomentumMatchesTheFloat64UpdateAndAddsTheStepFigures() {
    Random r = new Random(9);
    int n = 100_003;
    float[] w = random(r, n, 1f);
    float[] v = random(r, n, 0.1f);
    float[] g = random(r, n + 2, 0.1f);
    float lr = 0.05f;
    float mu = 0.9f;
    long dw = up(w);
    long dv = up(v);
    CUdeviceptr stats = alloc(16);
    cuMemcpyHtoD(stats, Pointer.to(new double[] {1.5, 2}), 16);
    k.sgdMomentum(dw, dv, up(g), n, lr, mu, DevicePointers.address(stats), null);
    float[] w2 = down(dw, n);
    float[] v2 = down(dv, n);
    for (int i = 0; i < n; i++) {
      double vr = (double) mu * v[i] + g[i];
      double wr = w[i] - (double) lr * vr;
      // two f32 roundings (or one, fused) of values of this size
      assertEquals(vr, v2[i], 2e-7 * (Math.abs(mu * v[i]) + Math.abs(g[i])) + 1e-12, "v " + i);
      assertEquals(wr, w2[i], 2e-7 * (Math.abs(w[i]) + Math.abs(lr * vr)) + 1e-12, "w " + i);
    }
    double[] st = new double[2];
    cuMemcpyDtoH(Pointer.to(st), stats, 16);
    assertEquals(1.5 + g[n], st[0], 1e-12);
    assertEquals(2.0 + g[n + 1], st[1], 1e-12); // in double, as the kernel adds
  }

  @Test
  void gatherTakesTheSamplesThePermutationNamesAndScalesThem() {
    Random r = new Random(11);
    int samples = 301;
    int pixels = 784;
    byte[] images = new byte[samples * pixels];
    r.nextBytes(images);
    byte[] labels = new byte[samples];
    for (int i = 0; i < samples; i++) {
      labels[i] = (byte) r.nextInt(10);
    }
    int[] order = new int[samples];
    for (int i = 0; i < samples; i++) {
      order[i] = (i * 97 + 13) % samples; // 97 is prime to 301: a permutation
    }
    long dImages = up(images);
    long dLabels = up(labels);
    long dOrder = up(order);
    for (boolean permuted : new boolean[] {true, false}) {
      int m = 37;
      int base = 5;
      int stride = 3;
      long x = up(new float[m * pixels]);
      CUdeviceptr y = alloc(m);
      k.gatherBatch(dImages, dLabels, permuted ? dOrder : 0, base, stride, m, pixels, x,
          DevicePointers.address(y), null);
      float[] got = down(x, m * pixels);
      byte[] gotY = new byte[m];
      cuMemcpyDtoH(Pointer.to(gotY), y, m);
      for (int q = 0; q < m; q++) {
        int idx = permuted ? order[base + q * stride] : base + q * stride;
        assertEquals(labels[idx], gotY[q], "label " + q);
        for (int p = 0; p < pixels; p++) {
          assertEquals((images[idx * pixels + p] & 0xFF) / 255f, got[q * pixels + p], 1e-7f,
              "pixel " + p + " of sample " + q);
        }
      }
    }
  }
}
