package io.treeline.examples.gpu;

import java.util.Arrays;

/**
 * The shapes of the GPU trainer, apart from any GPU so that they are tested here: the flat
 * parameter layout of the CPU {@code Mlp} (layer l: W_l, {@code in x out} row-major, then
 * b_l), the per-rank batch, and the split of the test set into evaluation chunks.
 */
public record MlpLayout(int[] sizes, long[] wOff, long[] bOff, long params) {
  /** Test images scored per forward pass in the evaluation (as the CPU job). */
  public static final int EVAL_BATCH = 500;

  /** {@code pixels}, the hidden sizes, 10 classes. */
  public static MlpLayout of(int pixels, int[] hidden, int classes) {
    if (pixels < 1 || classes < 1) {
      throw new IllegalArgumentException(pixels + " inputs, " + classes + " classes");
    }
    int[] sizes = new int[hidden.length + 2];
    sizes[0] = pixels;
    for (int i = 0; i < hidden.length; i++) {
      if (hidden[i] < 1) {
        throw new IllegalArgumentException("hidden layer " + (i + 1) + " has " + hidden[i]
            + " units; every layer needs at least one (" + Arrays.toString(hidden) + ")");
      }
      sizes[i + 1] = hidden[i];
    }
    sizes[sizes.length - 1] = classes;
    int layers = sizes.length - 1;
    long[] w = new long[layers];
    long[] b = new long[layers];
    long p = 0;
    for (int l = 0; l < layers; l++) {
      w[l] = p;
      p += (long) sizes[l] * sizes[l + 1];
      b[l] = p;
      p += sizes[l + 1];
    }
    if (p + 2 > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(p + " parameters do not fit one float[]");
    }
    return new MlpLayout(sizes, w, b, p);
  }

  public int layers() {
    return sizes.length - 1;
  }

  /** Rows of a rank's share of the global batch; the global batch must split evenly. */
  public static int localBatch(int batch, int ranks) {
    if (ranks < 1 || batch < ranks || batch % ranks != 0) {
      throw new IllegalArgumentException("the global batch (" + batch + ") must be a positive "
          + "multiple of the number of ranks (" + ranks + ")");
    }
    return batch / ranks;
  }

  /** Test images rank {@code rank} of {@code ranks} scores: rank, rank + R, ... below total. */
  public static int testShare(int total, int rank, int ranks) {
    return rank >= total ? 0 : (total - rank + ranks - 1) / ranks;
  }

  /** Evaluation chunks of at most EVAL_BATCH images over a share of {@code share}. */
  public static int evalChunks(int share) {
    return (share + EVAL_BATCH - 1) / EVAL_BATCH;
  }

  /** Position in the epoch's order of row q of rank r's part of step s (as the CPU job). */
  public static long position(int step, int batch, int q, int ranks, int rank) {
    return (long) step * batch + (long) q * ranks + rank;
  }
}
