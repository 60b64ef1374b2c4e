package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;

import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUstream;

/**
 * The training kernels of {@code training.cuh}: the TF32 tensor-core GEMM with its epilogues
 * (the three products of a dense layer), column sums for bias gradients, softmax cross-entropy
 * with its gradient, the fused SGD-with-momentum update and the gather of a batch from a
 * resident uint8 data set. Matrices are row-major f32 at device addresses ({@link
 * DevicePointers}); argument arrays are prepared once, so a launch allocates nothing; one
 * instance per rank thread.
 */
public final class TrainingKernels {
  /** Output tile of one GEMM block (BM = BN in training.cuh). */
  public static final int TILE = 64;
  private static final int GEMM_THREADS = 128;
  /** Threads of the one block of softmax_xent (its shared arrays hold 256). */
  private static final int XENT_THREADS = 256;
  private static final int THREADS = 256;

  private final CUfunction gemm;
  private final CUfunction colSum;
  private final CUfunction xent;
  private final CUfunction sgd;
  private final CUfunction gather;
  private final int maxBlocks;

  // gemm_tf32(A, B, C, M, N, K, lda, ldb, ldc, transA, transB, bias, mask, ldmask, relu)
  private final long[] gA = new long[1];
  private final long[] gB = new long[1];
  private final long[] gC = new long[1];
  private final int[] gM = new int[1];
  private final int[] gN = new int[1];
  private final int[] gK = new int[1];
  private final int[] gLda = new int[1];
  private final int[] gLdb = new int[1];
  private final int[] gLdc = new int[1];
  private final int[] gTa = new int[1];
  private final int[] gTb = new int[1];
  private final long[] gBias = new long[1];
  private final long[] gMask = new long[1];
  private final int[] gLdMask = new int[1];
  private final int[] gRelu = new int[1];
  private final Pointer gemmArgs = Pointer.to(Pointer.to(gA), Pointer.to(gB), Pointer.to(gC),
      Pointer.to(gM), Pointer.to(gN), Pointer.to(gK), Pointer.to(gLda), Pointer.to(gLdb),
      Pointer.to(gLdc), Pointer.to(gTa), Pointer.to(gTb), Pointer.to(gBias), Pointer.to(gMask),
      Pointer.to(gLdMask), Pointer.to(gRelu));
  // col_sum(X, m, n, ld, out)
  private final long[] cX = new long[1];
  private final int[] cM = new int[1];
  private final int[] cN = new int[1];
  private final int[] cLd = new int[1];
  private final long[] cOut = new long[1];
  private final Pointer colArgs = Pointer.to(Pointer.to(cX), Pointer.to(cM), Pointer.to(cN),
      Pointer.to(cLd), Pointer.to(cOut));
  // softmax_xent(Z, y, m, c, dZ, scale, stats, lossScale)
  private final long[] xZ = new long[1];
  private final long[] xY = new long[1];
  private final int[] xM = new int[1];
  private final int[] xC = new int[1];
  private final long[] xDz = new long[1];
  private final float[] xScale = new float[1];
  private final long[] xStats = new long[1];
  private final float[] xLossScale = new float[1];
  private final Pointer xentArgs = Pointer.to(Pointer.to(xZ), Pointer.to(xY), Pointer.to(xM),
      Pointer.to(xC), Pointer.to(xDz), Pointer.to(xScale), Pointer.to(xStats),
      Pointer.to(xLossScale));
  // sgd_momentum(w, v, g, n, lr, momentum, epochStats)
  private final long[] sW = new long[1];
  private final long[] sV = new long[1];
  private final long[] sG = new long[1];
  private final long[] sN = new long[1];
  private final float[] sLr = new float[1];
  private final float[] sMomentum = new float[1];
  private final long[] sStats = new long[1];
  private final Pointer sgdArgs = Pointer.to(Pointer.to(sW), Pointer.to(sV), Pointer.to(sG),
      Pointer.to(sN), Pointer.to(sLr), Pointer.to(sMomentum), Pointer.to(sStats));
  // gather_batch(images, allLabels, order, base, stride, m, pixels, X, labels)
  private final long[] bImages = new long[1];
  private final long[] bAllLabels = new long[1];
  private final long[] bOrder = new long[1];
  private final int[] bBase = new int[1];
  private final int[] bStride = new int[1];
  private final int[] bM = new int[1];
  private final int[] bPixels = new int[1];
  private final long[] bX = new long[1];
  private final long[] bLabels = new long[1];
  private final Pointer gatherArgs = Pointer.to(Pointer.to(bImages), Pointer.to(bAllLabels),
      Pointer.to(bOrder), Pointer.to(bBase), Pointer.to(bStride), Pointer.to(bM),
      Pointer.to(bPixels), Pointer.to(bX), Pointer.to(bLabels));

  public TrainingKernels(CudaModule module) {
    gemm = module.function("gemm_tf32");
    colSum = module.function("col_sum");
    xent = module.function("softmax_xent");
    sgd = module.function("sgd_momentum");
    gather = module.function("gather_batch");
    maxBlocks = module.smCount() * 4;
  }

  /** Blocks of the GEMM grid along one dimension of {@code extent} rows or columns. */
  public static int tiles(int extent) {
    return (extent + TILE - 1) / TILE;
  }

  /**
   * Enqueues {@code C[m x n] = op(A) op(B) (+ bias) (ReLU) (x [mask > 0])} with TF32 products
   * and f32 sums: {@code op(A)} is {@code m x k}, read as {@code A[k*lda + i]} when
   * {@code transA}, else {@code A[i*lda + k]}; likewise {@code op(B)} ({@code k x n}).
   * {@code bias} ({@code n} floats) and {@code mask} ({@code m x n}, leading dimension
   * {@code ldmask}) are 0 when absent. Any shape with m, n, k >= 0; nothing runs when m or n is
   * 0, and k == 0 gives the epilogue of zeros.
   */
  public void gemm(long a, boolean transA, int lda, long b, boolean transB, int ldb, long c,
      int ldc, int m, int n, int k, long bias, boolean relu, long mask, int ldmask,
      CUstream stream) {
    GemmShapes.check(transA, lda, transB, ldb, ldc, m, n, k, mask != 0, ldmask);
    if (m == 0 || n == 0) {
      return;
    }
    gA[0] = a;
    gB[0] = b;
    gC[0] = c;
    gM[0] = m;
    gN[0] = n;
    gK[0] = k;
    gLda[0] = lda;
    gLdb[0] = ldb;
    gLdc[0] = ldc;
    gTa[0] = transA ? 1 : 0;
    gTb[0] = transB ? 1 : 0;
    gBias[0] = bias;
    gMask[0] = mask;
    gLdMask[0] = ldmask;
    gRelu[0] = relu ? 1 : 0;
    cuLaunchKernel(gemm, tiles(n), tiles(m), 1, GEMM_THREADS, 1, 1, 0, stream, gemmArgs, null);
  }

  /** Enqueues {@code out[j] = sum_i X[i*ld + j]} for {@code j < n} (a bias gradient). */
  public void columnSums(long x, int m, int n, int ld, long out, CUstream stream) {
    if (m < 0 || n < 0 || (n > 0 && ld < n)) {
      throw new IllegalArgumentException("column sums of " + m + " x " + n + " with leading "
          + "dimension " + ld);
    }
    if (n == 0) {
      return;
    }
    cX[0] = x;
    cM[0] = m;
    cN[0] = n;
    cLd[0] = ld;
    cOut[0] = out;
    cuLaunchKernel(colSum, (n + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, stream, colArgs,
        null);
  }

  /**
   * Enqueues the softmax cross-entropy of logits {@code z} ({@code m x classes}) against uint8
   * {@code labels}: {@code dz = (softmax - onehot) * scale} (skipped when {@code dz} is 0);
   * {@code stats[0] = lossScale * summed loss}, {@code stats[1] = hits} (two floats).
   */
  public void softmaxCrossEntropy(long z, long labels, int m, int classes, long dz, float scale,
      long stats, float lossScale, CUstream stream) {
    if (m < 0 || classes < 1) {
      throw new IllegalArgumentException("softmax over " + m + " rows of " + classes
          + " classes");
    }
    xZ[0] = z;
    xY[0] = labels;
    xM[0] = m;
    xC[0] = classes;
    xDz[0] = dz;
    xScale[0] = scale;
    xStats[0] = stats;
    xLossScale[0] = lossScale;
    cuLaunchKernel(xent, 1, 1, 1, XENT_THREADS, 1, 1, 0, stream, xentArgs, null);
  }

  /**
   * Enqueues {@code v = momentum * v + g; w -= lr * v} over {@code n} floats; where
   * {@code epochStats} is not 0, also adds {@code g[n]} and {@code g[n+1]} to the two doubles
   * there.
   */
  public void sgdMomentum(long w, long v, long g, long n, float lr, float momentum,
      long epochStats, CUstream stream) {
    if (n < 0) {
      throw new IllegalArgumentException("SGD over " + n + " parameters");
    }
    sW[0] = w;
    sV[0] = v;
    sG[0] = g;
    sN[0] = n;
    sLr[0] = lr;
    sMomentum[0] = momentum;
    sStats[0] = epochStats;
    int blocks = (int) Math.max(1, Math.min(maxBlocks, (n + THREADS - 1) / THREADS));
    cuLaunchKernel(sgd, blocks, 1, 1, THREADS, 1, 1, 0, stream, sgdArgs, null);
  }

  /**
   * Enqueues the gather of {@code m} samples: {@code x[q] = images[idx_q] / 255},
   * {@code labels[q] = allLabels[idx_q]} with {@code idx_q = order[base + q*stride]}
   * ({@code order} 0: {@code base + q*stride}).
   */
  public void gatherBatch(long images, long allLabels, long order, int base, int stride, int m,
      int pixels, long x, long labels, CUstream stream) {
    if (m < 0 || pixels < 1 || base < 0 || stride < 1) {
      throw new IllegalArgumentException("gather of " + m + " samples of " + pixels
          + " pixels from " + base + " step " + stride);
    }
    if (m == 0) {
      return;
    }
    bImages[0] = images;
    bAllLabels[0] = allLabels;
    bOrder[0] = order;
    bBase[0] = base;
    bStride[0] = stride;
    bM[0] = m;
    bPixels[0] = pixels;
    bX[0] = x;
    bLabels[0] = labels;
    long total = (long) m * pixels;
    int blocks = (int) Math.max(1, Math.min(maxBlocks, (total + THREADS - 1) / THREADS));
    cuLaunchKernel(gather, blocks, 1, 1, THREADS, 1, 1, 0, stream, gatherArgs, null);
  }
}
