package io.treeline.examples.mnist;

import java.util.Random;

/**
 * A multilayer perceptron (ReLU hidden layers, softmax cross-entropy) with every parameter in
 * one flat {@code float[]} and its gradient in another of the same layout, so one allreduce
 * averages the whole gradient. Layer l holds W_l (in x out, row-major) then b_l.
 *
 * <p>Written for the JIT: every inner loop runs over contiguous floats (i-k-j order for the
 * matrix products, which C2 vectorises), zero activations after ReLU are skipped, and all
 * buffers are allocated once for the largest batch. Not thread-safe: one per rank.
 */
public final class Mlp {
  private final int[] sizes;
  private final int[] wOff;
  private final int[] bOff;
  private final int params;
  private final int maxBatch;
  private final float[][] act; // act[0] = input, act[l] = output of layer l (post-ReLU)
  private final float[][] delta;

  public Mlp(int[] sizes, int maxBatch) {
    this.sizes = sizes.clone();
    this.maxBatch = maxBatch;
    int layers = sizes.length - 1;
    wOff = new int[layers];
    bOff = new int[layers];
    int p = 0;
    for (int l = 0; l < layers; l++) {
      wOff[l] = p;
      p += sizes[l] * sizes[l + 1];
      bOff[l] = p;
      p += sizes[l + 1];
    }
    params = p;
    act = new float[sizes.length][];
    delta = new float[sizes.length][];
    for (int l = 0; l < sizes.length; l++) {
      act[l] = new float[maxBatch * sizes[l]];
      delta[l] = new float[maxBatch * sizes[l]];
    }
  }

  public int parameterCount() {
    return params;
  }

  public int[] sizes() {
    return sizes.clone();
  }

  /** He initialisation from {@code seed}: every rank with the same seed starts identical. */
  public void init(float[] w, long seed) {
    Random r = new Random(seed);
    for (int l = 0; l < sizes.length - 1; l++) {
      double std = Math.sqrt(2.0 / sizes[l]);
      for (int i = 0; i < sizes[l] * sizes[l + 1]; i++) {
        w[wOff[l] + i] = (float) (r.nextGaussian() * std);
      }
      for (int j = 0; j < sizes[l + 1]; j++) {
        w[bOff[l] + j] = 0f;
      }
    }
  }

  /** The input rows of the next batch: {@code m * sizes[0]} floats, filled by the caller. */
  public float[] input() {
    return act[0];
  }

  /**
   * Forward and backward over the first {@code m} input rows: writes d(mean loss)/dw scaled by
   * {@code scale} into {@code grad} (overwriting) and returns the summed loss; {@code correct}
   * gets the number of rows whose argmax matched.
   */
  public double step(float[] w, int m, byte[] labels, int labelOff, float[] grad, float scale,
      int[] correct) {
    double loss = forward(w, m, labels, labelOff, correct);
    int L = sizes.length - 1;
    int out = sizes[L];
    float[] p = act[L];
    float[] d = delta[L];
    for (int i = 0; i < m; i++) {
      int y = labels[labelOff + i];
      for (int j = 0; j < out; j++) {
        d[i * out + j] = (p[i * out + j] - (j == y ? 1f : 0f)) * scale;
      }
    }
    for (int l = L - 1; l >= 0; l--) {
      int in = sizes[l];
      int o = sizes[l + 1];
      float[] a = act[l];
      float[] dz = delta[l + 1];
      int wo = wOff[l];
      int bo = bOff[l];
      java.util.Arrays.fill(grad, wo, bo + o, 0f);
      for (int i = 0; i < m; i++) {
        int ai = i * in;
        int di = i * o;
        for (int k = 0; k < in; k++) {
          float av = a[ai + k];
          if (av == 0f) {
            continue;
          }
          int row = wo + k * o;
          for (int j = 0; j < o; j++) {
            grad[row + j] += av * dz[di + j];
          }
        }
        for (int j = 0; j < o; j++) {
          grad[bo + j] += dz[di + j];
        }
      }
      if (l > 0) {
        float[] da = delta[l];
        for (int i = 0; i < m; i++) {
          int di = i * o;
          int ai = i * in;
          for (int k = 0; k < in; k++) {
            if (a[ai + k] == 0f) {
              da[ai + k] = 0f; // ReLU: no gradient where the unit was off
              continue;
            }
            int row = wo + k * o;
            float s = 0f;
            for (int j = 0; j < o; j++) {
              s += dz[di + j] * w[row + j];
            }
            da[ai + k] = s;
          }
        }
      }
    }
    return loss;
  }

  /** Forward only: summed cross-entropy of the first {@code m} rows; fills {@code correct[0]}. */
  public double forward(float[] w, int m, byte[] labels, int labelOff, int[] correct) {
    if (m > maxBatch) {
      throw new IllegalArgumentException("batch of " + m + " rows exceeds " + maxBatch);
    }
    int L = sizes.length - 1;
    for (int l = 0; l < L; l++) {
      int in = sizes[l];
      int o = sizes[l + 1];
      float[] a = act[l];
      float[] z = act[l + 1];
      int wo = wOff[l];
      int bo = bOff[l];
      for (int i = 0; i < m; i++) {
        int zi = i * o;
        System.arraycopy(w, bo, z, zi, o);
        int ai = i * in;
        for (int k = 0; k < in; k++) {
          float av = a[ai + k];
          if (av == 0f) {
            continue;
          }
          int row = wo + k * o;
          for (int j = 0; j < o; j++) {
            z[zi + j] += av * w[row + j];
          }
        }
        if (l < L - 1) {
          for (int j = 0; j < o; j++) {
            if (z[zi + j] < 0f) {
              z[zi + j] = 0f;
            }
          }
        }
      }
    }
    int out = sizes[L];
    float[] p = act[L];
    double loss = 0;
    int right = 0;
    for (int i = 0; i < m; i++) {
      int pi = i * out;
      float max = p[pi];
      int arg = 0;
      for (int j = 1; j < out; j++) {
        if (p[pi + j] > max) {
          max = p[pi + j];
          arg = j;
        }
      }
      double sum = 0;
      for (int j = 0; j < out; j++) {
        float e = (float) Math.exp(p[pi + j] - max);
        p[pi + j] = e;
        sum += e;
      }
      for (int j = 0; j < out; j++) {
        p[pi + j] = (float) (p[pi + j] / sum);
      }
      int y = labels[labelOff + i];
      loss -= Math.log(Math.max(p[pi + y], 1e-30f));
      if (arg == y) {
        right++;
      }
    }
    correct[0] = right;
    return loss;
  }
}
