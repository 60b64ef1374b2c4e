package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuFuncSetAttribute;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;

import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUfunction_attribute;
import jcuda.driver.CUstream;

/**
 * The training kernels of {@code training.cuh}: the TF32 tensor-core GEMMs with their epilogues
 * (the three products of a dense layer; {@link #gemm} picks the tile shape and split-K), column sums for bias gradients, softmax cross-entropy
 * with its gradient, the fused SGD-with-momentum update and the gather of a batch from a
 * resident uint8 data set. Matrices are row-major f32 at device addresses ({@link
 * DevicePointers}); argument arrays are prepared once, so a launch allocates nothing; one
 * instance per rank thread.
 *
 * <p>On compute capability 9.0 the large products run on the wgmma kernels of
 * {@code gemm_sm90.cuh} (the module's sm_90a cubin): where {@link #hopperGemm()} is on, the
 * operands are 16-byte aligned with leading dimensions a multiple of 4, the product has at least
 * {@link #HOPPER_MIN_WORK} multiply-adds ({@link #HOPPER_MIN_WORK_NN} for NN products) and
 * {@link #hopperShape} takes it; every other product
 * runs on the wmma kernels.
 *
 * <p>Of the wgmma kernels, the TMA ones ({@code gemm_sm90_tma.cuh}: tensor-memory-accelerator
 * loads into a 7-stage mbarrier pipeline fed by a producer warpgroup, two consumer warpgroups,
 * 128 x 128 blocks, {@link #tmaShape}) run where {@link TensorMaps} can encode tensor maps (the
 * JVM started with {@code --add-modules=jdk.incubator.foreign
 * --enable-native-access=ALL-UNNAMED}); else the cp.async ones of {@code gemm_sm90.cuh} ({@link
 * #hopperShape}). {@link #tmaAbsent()} says why the TMA kernels are off where they are.
 */
public final class TrainingKernels implements AutoCloseable {
  /** Output tile of the small GEMM blocks (Small in training.cuh). */
  public static final int TILE = 64;
  /** Output tile of the large GEMM blocks (Big in training.cuh). */
  public static final int BIG_TILE = 128;
  private static final int SMALL_THREADS = 128;
  private static final int BIG_THREADS = 256;
  /** K per small-kernel slice: a split takes at least four. */
  private static final int SMALL_BK = 32;
  private static final int MAX_SPLITS = 16;
  /** Split-K partial sums: 4 Mi floats, allocated on the first split GEMM. */
  private static final long WORKSPACE_FLOATS = 4L << 20;
  /** Threads of the one block of softmax_xent (its shared arrays hold 256). */
  private static final int XENT_THREADS = 256;
  private static final int THREADS = 256;
  /**
   * The one switch of the wgmma path: false keeps every product on the wmma kernels, on every
   * device (it is also off wherever CudaModule has no sm_90a module: not compute capability 9.0).
   */
  static final boolean WGMMA = true;
  /** Rows of R per wgmma block (two warpgroups of 64; sm90::BR). */
  public static final int HOPPER_BR = 128;
  private static final int HOPPER_THREADS = 256;
  private static final int HOPPER_BK = 32;
  /** Shortest K for which the 256-wide wgmma block beats the 128-wide one (measured). */
  static final int HOPPER_WIDE_MIN_K = 1024;
  /**
   * Dynamic shared memory of a wgmma block of BS = 128 / 256 (sm90::Cfg&lt;BS&gt;::SMEM: 6 / 4
   * stages of a BS x 32 tile of S and a 128 x 32 tile of R).
   */
  private static final int HOPPER_SMEM_128 = 6 * (128 * 32 * 4 + 18432) + 1024;
  private static final int HOPPER_SMEM_256 = 4 * (256 * 32 * 4 + 18432) + 1024;
  /**
   * Products of fewer multiply-adds stay on the wmma kernels: the default model's (at most
   * 25.7 M) are launch-bound, the 20M model's start at 1.6 G.
   */
  public static final long HOPPER_MIN_WORK = 1L << 26;
  /**
   * The same bound for NN products (no operand transposed): from 4 Mi multiply-adds they are
   * faster on wgmma too. gemm_check on the H200 (2026-12-03 14:11 UTC): the default model's
   * forward products 128 x 256 x 784 and 128 x 128 x 256 took 0.0104 / 0.0093 ms on wgmma against
   * 0.0156 / 0.0129 on wmma, while its TN and NT products (weight and input gradients, TN
   * transposed first) were 7-18% slower on wgmma at that size.
   */
  public static final long HOPPER_MIN_WORK_NN = 1L << 22;
  /** Threads of a TMA block: two consumer warpgroups and the producer (sm90n::TCfg&lt;2, 128&gt;). */
  private static final int TMA_THREADS = 384;
  /** Rows and columns of a TMA block's output tile. */
  public static final int TMA_BLOCK = 128;
  /**
   * Dynamic shared memory of a TMA block: 7 stages of a 128 x 32 tile of S and one of R (32 KiB
   * each stage), the mbarriers and the 1024-byte alignment slack (sm90n::TCfg&lt;2, 128&gt;::SMEM).
   */
  private static final int TMA_SMEM = 7 * 32768 + 256 + 1024;
  /** The transposed B of a TN product on the wgmma path: at most 16 Mi floats. */
  public static final long TRANSPOSED_MAX_FLOATS = 16L << 20;

  private final CUfunction[] big = new CUfunction[4];
  private final CUfunction[] small = new CUfunction[4];
  private final CUfunction splitFinish;
  /** gemm90_{nt,nn,tt}_{128,256}, null without the sm_90a module. */
  private final CUfunction[][] hopper;
  private final CUfunction transpose90;
  private boolean hopperOn;
  /** gemm90t2_{ss,rst,rs}_128 (NT, NN, TT), null where the TMA kernels cannot run. */
  private final CUfunction[] tma;
  private final TensorMaps maps;
  private String tmaAbsent;
  private boolean tmaOn;
  private CUdeviceptr transposed;
  private long transposedFloats;
  private final int sms;
  private CUdeviceptr workspace;
  private final CUfunction colSum;
  private final CUfunction xent;
  private final CUfunction sgd;
  private final CUfunction gather;
  private final int maxBlocks;

  // gemm_*(A, B, C, M, N, K, lda, ldb, ldc, bias, mask, ldmask, relu, W, splits, vecA, vecB)
  private final long[] gA = new long[1];
  private final long[] gB = new long[1];
  private final long[] gC = new long[1];
  private final int[] gM = new int[1];
  private final int[] gN = new int[1];
  private final int[] gK = new int[1];
  private final int[] gLda = new int[1];
  private final int[] gLdb = new int[1];
  private final int[] gLdc = new int[1];
  private final long[] gBias = new long[1];
  private final long[] gMask = new long[1];
  private final int[] gLdMask = new int[1];
  private final int[] gRelu = new int[1];
  private final long[] gW = new long[1];
  private final int[] gSplits = new int[1];
  private final int[] gVecA = new int[1];
  private final int[] gVecB = new int[1];
  private final Pointer gemmArgs = Pointer.to(Pointer.to(gA), Pointer.to(gB), Pointer.to(gC),
      Pointer.to(gM), Pointer.to(gN), Pointer.to(gK), Pointer.to(gLda), Pointer.to(gLdb),
      Pointer.to(gLdc), Pointer.to(gBias), Pointer.to(gMask), Pointer.to(gLdMask),
      Pointer.to(gRelu), Pointer.to(gW), Pointer.to(gSplits), Pointer.to(gVecA),
      Pointer.to(gVecB));
  // gemm90_*(A, B, C, M, N, K, lda, ldb, ldc, bias, mask, ldmask, relu, W, splits)
  private final Pointer gemm90Args = Pointer.to(Pointer.to(gA), Pointer.to(gB), Pointer.to(gC),
      Pointer.to(gM), Pointer.to(gN), Pointer.to(gK), Pointer.to(gLda), Pointer.to(gLdb),
      Pointer.to(gLdc), Pointer.to(gBias), Pointer.to(gMask), Pointer.to(gLdMask),
      Pointer.to(gRelu), Pointer.to(gW), Pointer.to(gSplits));
  // gemm90t2_*(tmR, tmS, C, Rdim, Sdim, K, ldc, bias, mask, ldmask, relu, W, splits): the two
  // 128-byte tensor maps passed by value (__grid_constant__), copied into these slots
  private final byte[] tmR = new byte[TensorMaps.BYTES];
  private final byte[] tmS = new byte[TensorMaps.BYTES];
  private final int[] gR = new int[1];
  private final int[] gS = new int[1];
  private final Pointer tmaArgs = Pointer.to(Pointer.to(tmR), Pointer.to(tmS), Pointer.to(gC),
      Pointer.to(gR), Pointer.to(gS), Pointer.to(gK), Pointer.to(gLdc), Pointer.to(gBias),
      Pointer.to(gMask), Pointer.to(gLdMask), Pointer.to(gRelu), Pointer.to(gW),
      Pointer.to(gSplits));
  // gemm90_transpose(src, rows, cols, lds, dst, ldd)
  private final long[] tSrc = new long[1];
  private final int[] tRows = new int[1];
  private final int[] tCols = new int[1];
  private final int[] tLds = new int[1];
  private final long[] tDst = new long[1];
  private final int[] tLdd = new int[1];
  private final Pointer transposeArgs = Pointer.to(Pointer.to(tSrc), Pointer.to(tRows),
      Pointer.to(tCols), Pointer.to(tLds), Pointer.to(tDst), Pointer.to(tLdd));
  // gemm_splitk_finish(W, splits, M, N, C, ldc, bias, mask, ldmask, relu)
  private final Pointer finishArgs = Pointer.to(Pointer.to(gW), Pointer.to(gSplits),
      Pointer.to(gM), Pointer.to(gN), Pointer.to(gC), Pointer.to(gLdc), Pointer.to(gBias),
      Pointer.to(gMask), Pointer.to(gLdMask), Pointer.to(gRelu));
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
    String[] layouts = {"nn", "tn", "nt", "tt"}; // index: transA + 2 transB
    for (int l = 0; l < 4; l++) {
      big[l] = module.function("gemm_big_" + layouts[l]);
      small[l] = module.function("gemm_small_" + layouts[l]);
    }
    splitFinish = module.function("gemm_splitk_finish");
    sms = module.smCount();
    CUfunction[][] h = null;
    CUfunction t = module.hopperFunction("gemm90_transpose");
    if (t != null) {
      String[] kinds = {"nt", "nn", "tt"};
      h = new CUfunction[3][2];
      try {
        for (int i = 0; i < 3; i++) {
          for (int j = 0; j < 2; j++) {
            h[i][j] = module.hopperFunction("gemm90_" + kinds[i] + (j == 0 ? "_128" : "_256"));
            int rc = cuFuncSetAttribute(h[i][j],
                CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                j == 0 ? HOPPER_SMEM_128 : HOPPER_SMEM_256);
            if (rc != 0) {
              throw new IllegalStateException("cuFuncSetAttribute: error " + rc);
            }
          }
        }
      } catch (RuntimeException e) {
        h = null; // the shared memory the blocks need is not granted: the wmma kernels only
        t = null;
      }
    }
    hopper = h;
    transpose90 = t;
    hopperOn = WGMMA && h != null;
    CUfunction[] f = null;
    TensorMaps tm = null;
    String why;
    if (h == null) {
      why = module.hopperAbsent() != null ? module.hopperAbsent() : "no wgmma kernels";
    } else {
      TensorMaps.Encoder e = TensorMaps.encoder();
      why = TensorMaps.absent();
      if (e != null) {
        String[] names = {"gemm90t2_ss_128", "gemm90t2_rst_128", "gemm90t2_rs_128"};
        f = new CUfunction[3];
        try {
          for (int i = 0; i < 3; i++) {
            f[i] = module.hopperFunction(names[i]);
            int rc = cuFuncSetAttribute(f[i],
                CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, TMA_SMEM);
            if (rc != 0) {
              throw new IllegalStateException("cuFuncSetAttribute(" + names[i] + ", "
                  + TMA_SMEM + " bytes of shared memory): error " + rc);
            }
          }
          tm = new TensorMaps(e);
        } catch (RuntimeException x) {
          f = null;
          why = "the TMA kernels do not load: " + x.getMessage();
        }
      }
    }
    tma = f;
    maps = tm;
    tmaAbsent = f != null ? null : why;
    tmaOn = hopperOn && f != null;
    colSum = module.function("col_sum");
    xent = module.function("softmax_xent");
    sgd = module.function("sgd_momentum");
    gather = module.function("gather_batch");
    maxBlocks = module.smCount() * 4;
  }

  /** Whether {@link #gemm} sends the products it can to the wgmma kernels. */
  public boolean hopperGemm() {
    return hopperOn;
  }

  /**
   * Turns the wgmma path on or off (it stays off where the sm_90a module is not loaded); returns
   * whether it is on. For comparing the two paths in one process.
   */
  public boolean setHopperGemm(boolean on) {
    hopperOn = WGMMA && on && hopper != null;
    tmaOn = tmaOn && hopperOn;
    return hopperOn;
  }

  /** Whether the wgmma products run on the TMA kernels (else on the cp.async ones). */
  public boolean tmaGemm() {
    return tmaOn;
  }

  /**
   * Turns the TMA kernels on or off for the wgmma products (they stay off where {@link
   * #tmaAbsent()} says why, or the wgmma path is off); returns whether they are on.
   */
  public boolean setTmaGemm(boolean on) {
    tmaOn = on && hopperOn && tma != null && tmaAbsent == null;
    return tmaOn;
  }

  /** Why the TMA kernels are off on this device and JVM, or null where they can run. */
  public String tmaAbsent() {
    return tmaAbsent;
  }

  /** The kernels {@link #gemm} sends the products it can to: "tma", "wgmma" or "wmma". */
  public String gemmPath() {
    return tmaOn ? "tma" : hopperOn ? "wgmma" : "wmma";
  }

  /**
   * How the TMA kernels run {@code C[m x n] = op(A) op(B)} over {@code k} on {@code sms}
   * multiprocessors: 128 x 128 blocks over (R, S) as {@link #hopperShape} maps the layouts, K
   * split only when the blocks fill less than half the multiprocessors (about one block per
   * multiprocessor, each split at least four 32-deep slices, at most 16, the partial sums
   * within the workspace). Unlike the cp.async kernels no 256-wide block: with the producer
   * running 7 stages ahead, 128 x 128 unsplit was the fastest of the TMA kernels at every product
   * of the 20M model (gemm_check on an H100, 2026-12-05: 512 x 4096 x 4096 NN 0.0604 ms against
   * 0.0800 split 2 ways; NT 0.0662 against 0.0861 for 256 x 256 split 2).
   *
   * @return {128, splits}, or null where the kernels do not take it (as {@link #hopperShape})
   */
  public static int[] tmaShape(boolean transA, boolean transB, int m, int n, int k, int sms) {
    if (k == 0 || m == 0 || n == 0) {
      return null;
    }
    if (transA && !transB && (long) n * ((k + 3) / 4 * 4) > TRANSPOSED_MAX_FLOATS) {
      return null;
    }
    boolean nn = !transA && !transB;
    long blocks = (long) (((nn ? n : m) + TMA_BLOCK - 1) / TMA_BLOCK)
        * (((nn ? m : n) + TMA_BLOCK - 1) / TMA_BLOCK);
    long splits = 1;
    if (blocks * 2 <= sms) {
      long slices = (k + HOPPER_BK - 1) / HOPPER_BK;
      splits = Math.min(Math.min(sms / blocks, MAX_SPLITS), slices / 4);
      splits = Math.max(1, Math.min(splits, WORKSPACE_FLOATS / ((long) m * n)));
    }
    return new int[] {TMA_BLOCK, (int) splits};
  }

  /**
   * How the wgmma kernels run {@code C[m x n] = op(A) op(B)} over {@code k} on {@code sms}
   * multiprocessors. A block covers 128 rows of R by BS columns of S, where (R, S) is (A, B) for
   * NT, TT and TN (TN: B transposed first) and (B, A) for NN (C written transposed): BS = 256
   * where that gives at least a wave of blocks, else 128; K is split when the blocks fill less
   * than half the multiprocessors, or (K at least {@link #HOPPER_WIDE_MIN_K}) with BS = 256 when
   * 128-wide blocks would be between one and two waves but 256-wide ones at most half of one (about one block per multiprocessor, each split at least four
   * 32-deep slices, at most 16, the partial sums within the workspace).
   *
   * @return {BS, splits}, or null where the kernels do not take it (k, m or n 0; the transposed B
   *     of a TN product over {@link #TRANSPOSED_MAX_FLOATS})
   */
  public static int[] hopperShape(boolean transA, boolean transB, int m, int n, int k, int sms) {
    if (k == 0 || m == 0 || n == 0) {
      return null;
    }
    if (transA && !transB && (long) n * ((k + 3) / 4 * 4) > TRANSPOSED_MAX_FLOATS) {
      return null;
    }
    boolean nn = !transA && !transB;
    long rTiles = ((nn ? n : m) + HOPPER_BR - 1) / HOPPER_BR;
    int sDim = nn ? m : n;
    long t256 = rTiles * ((sDim + 255) / 256);
    // the wide block only for a full wave and a long K: at 4096 x 4096 x 512 the 128-wide block
    // ran 0.183 ms against 0.243 (H200, gemm_check, 2026-12-03); at K = 4096 the wide one won
    int bs = t256 >= sms && k >= HOPPER_WIDE_MIN_K ? 256 : 128;
    long t128 = rTiles * ((sDim + 127) / 128);
    long blocks = bs == 256 ? t256 : t128;
    long splits = 1;
    long slices = (k + HOPPER_BK - 1) / HOPPER_BK;
    if (k >= HOPPER_WIDE_MIN_K && t128 * 2 > sms && t256 * 2 <= sms) {
      // 128-wide blocks would run unsplit, short of two waves: 256-wide ones with K split to
      // fill the machine move less through L2 per multiply-add. 512 x 4096 x 4096 (the 20M
      // model's forward and input gradient, 64 such blocks split 2 ways): 0.0913 / 0.1098 ms
      // against 0.1007 / 0.1134 for 128 unsplit blocks of 128 x 128 (H200, gemm_check,
      // 2026-12-03 17:11 UTC; 0.0916 / 0.1104 as the plan at 17:34). At K = 784 it was slower.
      bs = 256;
      splits = Math.min(Math.min(sms / t256, MAX_SPLITS), slices / 4);
      splits = Math.max(1, Math.min(splits, WORKSPACE_FLOATS / ((long) m * n)));
    } else if (blocks * 2 <= sms) {
      splits = Math.min(Math.min(sms / blocks, MAX_SPLITS), slices / 4);
      splits = Math.max(1, Math.min(splits, WORKSPACE_FLOATS / ((long) m * n)));
    }
    return new int[] {bs, (int) splits};
  }

  /**
   * The {BS, splits} of {@link #tmaShape} (TMA kernels on) or {@link #hopperShape} where {@link
   * #gemm} of these arguments runs on the wgmma kernels, else null: the path is on, both operands are 16-byte aligned with leading
   * dimensions a multiple of 4 floats (its copies are 16 bytes), the product has at least
   * {@link #HOPPER_MIN_WORK} multiply-adds and the shape is one the kernels take.
   */
  public int[] hopperPlan(long a, boolean transA, int lda, long b, boolean transB, int ldb,
      int m, int n, int k) {
    if (!hopperOn || (a & 15) != 0 || (lda & 3) != 0 || (b & 15) != 0 || (ldb & 3) != 0
        || (long) m * n * k < (!transA && !transB ? HOPPER_MIN_WORK_NN : HOPPER_MIN_WORK)) {
      return null;
    }
    return tmaOn ? tmaShape(transA, transB, m, n, k, sms)
        : hopperShape(transA, transB, m, n, k, sms);
  }

  /** Blocks of the small GEMM grid along one dimension of {@code extent} rows or columns. */
  public static int tiles(int extent) {
    return (extent + TILE - 1) / TILE;
  }

  /**
   * How a GEMM of {@code m x n} outputs over {@code k} runs on {@code sms} multiprocessors: the
   * 128 x 128 tiles when they alone give three quarters of a wave of blocks, else the 64 x 64
   * tiles with K split so that about two blocks run per multiprocessor (each split at least four
   * 32-deep slices, at most 16 splits, the partial sums within the workspace). A split costs a
   * second launch, which a GEMM with K < 256 does not earn back: measured on the H200, the
   * default model's K = 128 products ran 20% slower split in two.
   *
   * @return {splits, 1 for big tiles else 0}
   */
  public static int[] shape(int m, int n, int k, int sms) {
    long bigTiles = (long) ((m + BIG_TILE - 1) / BIG_TILE) * ((n + BIG_TILE - 1) / BIG_TILE);
    if (bigTiles * 4 >= 3L * sms) {
      return new int[] {1, 1};
    }
    long smallTiles = (long) tiles(m) * tiles(n);
    long slices = (k + SMALL_BK - 1) / SMALL_BK;
    long splits = Math.min(Math.min(2L * sms / smallTiles, MAX_SPLITS), slices / 4);
    splits = Math.min(splits, WORKSPACE_FLOATS / ((long) m * n));
    return new int[] {(int) Math.max(1, splits), 0};
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
    int[] h = hopperPlan(a, transA, lda, b, transB, ldb, m, n, k);
    if (h != null) {
      gemm90(h, a, transA, lda, b, transB, ldb, c, ldc, m, n, k, bias, relu, mask, ldmask,
          stream);
      return;
    }
    // 16-byte copies need 16-byte aligned rows: the base and the leading dimension
    boolean vecA = (a & 15) == 0 && (lda & 3) == 0;
    boolean vecB = (b & 15) == 0 && (ldb & 3) == 0;
    int[] how = shape(m, n, k, sms);
    int splits = how[0];
    setGemmArgs(a, lda, b, ldb, c, ldc, m, n, k, bias, relu, mask, ldmask, splits);
    gVecA[0] = vecA ? 1 : 0;
    gVecB[0] = vecB ? 1 : 0;
    int layout = (transA ? 1 : 0) + (transB ? 2 : 0);
    if (how[1] == 1) {
      cuLaunchKernel(big[layout], (n + BIG_TILE - 1) / BIG_TILE, (m + BIG_TILE - 1) / BIG_TILE,
          1, BIG_THREADS, 1, 1, 0, stream, gemmArgs, null);
      return;
    }
    cuLaunchKernel(small[layout], tiles(n), tiles(m), splits, SMALL_THREADS, 1, 1, 0, stream,
        gemmArgs, null);
    if (splits > 1) {
      long total = (long) m * n;
      int blocks = (int) Math.max(1, Math.min(maxBlocks, (total + THREADS - 1) / THREADS));
      cuLaunchKernel(splitFinish, blocks, 1, 1, THREADS, 1, 1, 0, stream, finishArgs, null);
    }
  }

  /**
   * The kernel arguments both GEMM paths share, written into their prepared slots (no
   * allocation); the split-K workspace is allocated on the first split product.
   */
  private void setGemmArgs(long a, int lda, long b, int ldb, long c, int ldc, int m, int n, int k,
      long bias, boolean relu, long mask, int ldmask, int splits) {
    if (splits > 1 && workspace == null) {
      CUdeviceptr w = new CUdeviceptr();
      cuMemAlloc(w, 4 * WORKSPACE_FLOATS);
      workspace = w;
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
    gBias[0] = bias;
    gMask[0] = mask;
    gLdMask[0] = ldmask;
    gRelu[0] = relu ? 1 : 0;
    gW[0] = splits > 1 ? DevicePointers.address(workspace) : 0;
    gSplits[0] = splits;
  }

  private void gemm90(int[] h, long a, boolean transA, int lda, long b, boolean transB, int ldb,
      long c, int ldc, int m, int n, int k, long bias, boolean relu, long mask, int ldmask,
      CUstream stream) {
    int bs = h[0];
    int splits = h[1];
    if (transA && !transB) { // TN: B [k][n] -> [n][k], then TT
      int ldt = (k + 3) / 4 * 4;
      long need = (long) n * ldt;
      if (need > transposedFloats) {
        if (transposed != null) {
          cuMemFree(transposed);
          transposed = null;
          transposedFloats = 0;
        }
        CUdeviceptr t = new CUdeviceptr();
        cuMemAlloc(t, 4 * need);
        transposed = t;
        transposedFloats = need;
      }
      tSrc[0] = b;
      tRows[0] = k;
      tCols[0] = n;
      tLds[0] = ldb;
      tDst[0] = DevicePointers.address(transposed);
      tLdd[0] = ldt;
      cuLaunchKernel(transpose90, (n + 31) / 32, (k + 31) / 32, 1, 32, 8, 1, 0, stream,
          transposeArgs, null);
      b = tDst[0];
      ldb = ldt;
      transB = true;
    }
    if (tmaOn) {
      setGemmArgs(a, lda, b, ldb, c, ldc, m, n, k, bias, relu, mask, ldmask, splits);
      try {
        launchTma(a, transA, lda, b, transB, ldb, m, n, k, splits, stream);
        return;
      } catch (IllegalStateException refused) {
        // the driver refused a tensor map: the cp.async kernels from here on, and say why
        tmaOn = false;
        tmaAbsent = refused.getMessage();
        int[] p = hopperShape(transA, transB, m, n, k, sms);
        bs = p[0];
        splits = p[1];
      }
    }
    setGemmArgs(a, lda, b, ldb, c, ldc, m, n, k, bias, relu, mask, ldmask, splits);
    boolean nn = !transA && !transB;
    int kind = !transA && transB ? 0 : nn ? 1 : 2;
    int rDim = nn ? n : m;
    int sDim = nn ? m : n;
    cuLaunchKernel(hopper[kind][bs == 256 ? 1 : 0], (rDim + HOPPER_BR - 1) / HOPPER_BR,
        (sDim + bs - 1) / bs, splits, HOPPER_THREADS, 1, 1,
        bs == 256 ? HOPPER_SMEM_256 : HOPPER_SMEM_128, stream, gemm90Args, null);
    if (splits > 1) {
      long total = (long) m * n;
      int blocks = (int) Math.max(1, Math.min(maxBlocks, (total + THREADS - 1) / THREADS));
      cuLaunchKernel(splitFinish, blocks, 1, 1, THREADS, 1, 1, 0, stream, finishArgs, null);
    }
  }

  /**
   * The TMA kernel of the layout (TN already transposed to TT), its tensor maps from the cache;
   * the shared arguments are set. NT: R = A [m][k], S = B [n][k]; NN: R = B [k][n], S = A [m][k]
   * (C written transposed); TT: R = A [k][m], S = B [n][k]. A map of R of a register-A kernel
   * (NN, TT) is read as 32 x 32 boxes, the others as 32 x 128.
   */
  private void launchTma(long a, boolean transA, int lda, long b, boolean transB, int ldb, int m,
      int n, int k, int splits, CUstream stream) {
    int kind;
    byte[] r;
    byte[] s;
    if (!transA && transB) {
      kind = 0;
      r = maps.map(a, m, k, lda, TMA_BLOCK);
      s = maps.map(b, n, k, ldb, TMA_BLOCK);
    } else if (!transA) {
      kind = 1;
      r = maps.map(b, k, n, ldb, TensorMaps.BOX_COLS);
      s = maps.map(a, m, k, lda, TMA_BLOCK);
    } else {
      kind = 2;
      r = maps.map(a, k, m, lda, TensorMaps.BOX_COLS);
      s = maps.map(b, n, k, ldb, TMA_BLOCK);
    }
    System.arraycopy(r, 0, tmR, 0, TensorMaps.BYTES);
    System.arraycopy(s, 0, tmS, 0, TensorMaps.BYTES);
    int rDim = kind == 1 ? n : m;
    int sDim = kind == 1 ? m : n;
    gR[0] = rDim;
    gS[0] = sDim;
    cuLaunchKernel(tma[kind], (rDim + TMA_BLOCK - 1) / TMA_BLOCK,
        (sDim + TMA_BLOCK - 1) / TMA_BLOCK, splits, TMA_THREADS, 1, 1, TMA_SMEM, stream, tmaArgs,
        null);
    if (splits > 1) {
      long total = (long) m * n;
      int blocks = (int) Math.max(1, Math.min(maxBlocks, (total + THREADS - 1) / THREADS));
      cuLaunchKernel(splitFinish, blocks, 1, 1, THREADS, 1, 1, 0, stream, finishArgs, null);
    }
  }

  /** Frees the split-K workspace and the transposed operand (the kernels belong to the module). */
  @Override
  public void close() {
    if (workspace != null) {
      cuMemFree(workspace);
      workspace = null;
    }
    if (transposed != null) {
      cuMemFree(transposed);
      transposed = null;
      transposedFloats = 0;
    }
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
