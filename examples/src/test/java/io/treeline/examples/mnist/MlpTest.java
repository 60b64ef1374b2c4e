package io.treeline.examples.mnist;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

class MlpTest {
  @Test
  void backpropagationMatchesFiniteDifferences() {
    int[] sizes = {7, 5, 4, 10};
    int m = 6;
    Mlp mlp = new Mlp(sizes, m);
    float[] w = new float[mlp.parameterCount()];
    mlp.init(w, 1);
    Random r = new Random(2);
    for (int i = 0; i < w.length; i++) {
      w[i] += (float) (0.05 * r.nextGaussian()); // biases off zero too
    }
    byte[] labels = new byte[m];
    float[] x = new float[m * sizes[0]];
    for (int i = 0; i < m; i++) {
      labels[i] = (byte) r.nextInt(10);
    }
    for (int i = 0; i < x.length; i++) {
      x[i] = (float) r.nextGaussian();
    }
    float[] grad = new float[w.length];
    System.arraycopy(x, 0, mlp.input(), 0, x.length);
    mlp.step(w, m, labels, 0, grad, 1f / m, new int[1]);
    double worst = 0;
    for (int i = 0; i < w.length; i++) {
      float saved = w[i];
      // small enough not to cross a ReLU kink (1e-3 did: a unit sat 5e-4 from zero), large
      // enough for float rounding of the loss
      double h = 1e-4;
      w[i] = (float) (saved + h);
      System.arraycopy(x, 0, mlp.input(), 0, x.length);
      double up = mlp.forward(w, m, labels, 0, new int[1]) / m;
      w[i] = (float) (saved - h);
      System.arraycopy(x, 0, mlp.input(), 0, x.length);
      double down = mlp.forward(w, m, labels, 0, new int[1]) / m;
      w[i] = saved;
      double numeric = (up - down) / (2 * h);
      double err = Math.abs(numeric - grad[i]) / Math.max(1e-2, Math.abs(numeric)
          + Math.abs(grad[i]));
      worst = Math.max(worst, err);
      assertTrue(err < 2e-2, "parameter " + i + ": backprop " + grad[i] + ", numeric "
          + numeric);
    }
    System.out.printf("gradient check: %d parameters, worst relative error %.2e%n", w.length,
        worst);
  }
}
