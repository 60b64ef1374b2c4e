package io.treeline.examples.mnist;

import io.treeline.barrier.GradientAggregator;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Data-parallel training of an {@link Mlp} on Fashion-MNIST over a {@link Communicator} (no
 * Spark type: the same loop runs in a Spark barrier task and under {@code ./treeline run}).
 *
 * <p>Every rank shuffles the training set with the same seed; global step s takes the next
 * {@code batch} samples of that order and rank r computes the mean gradient of those at
 * positions r, r+R, r+2R, ...; {@link GradientAggregator} averages the gradients (and, in two
 * extra slots, the loss and the hit count), and every rank applies the same momentum-SGD
 * update, so the replicas stay bit-identical. One rank with the same global batch sees the
 * same samples in the same steps.
 */
public final class Trainer {
  /** Hyper-parameters; {@code trainLimit} 0 means the whole training set. */
  public record Options(int[] hidden, int epochs, int batch, float lr, float momentum,
      float lrDecay, long seed, int trainLimit) implements java.io.Serializable {
    public static Options defaults() {
      return new Options(new int[] {256, 128}, 10, 128, 0.05f, 0.9f, 0.85f, 42, 0);
    }
  }

  /** One epoch's figures, the same on every rank. */
  public record Epoch(int epoch, double loss, double trainAccuracy, double testAccuracy,
      double samplesPerSecond, double allReduceShare, double seconds, double elapsedSeconds)
      implements java.io.Serializable {
  }

  public record Result(List<Epoch> history, float[] weights) implements java.io.Serializable {
  }

  /** Told of every epoch and step, for a progress display. */
  public interface Progress {
    void epochStarted(int epoch, int epochs, int steps);

    void stepped();

    void epochEnded();
  }

  private Trainer() {
  }

  /**
   * Trains; rank 0 passes {@code out} for the epoch lines and, on a terminal, {@code progress}
   * (null: none).
   */
  public static Result train(Communicator comm, FashionMnist data, Options o, PrintStream out,
      Progress progress) {
    int ranks = comm.size();
    int rank = comm.topologyRank();
    if (o.batch % ranks != 0) {
      throw new IllegalArgumentException("the global batch (" + o.batch + ") must be a multiple"
          + " of the number of ranks (" + ranks + ")");
    }
    int local = o.batch / ranks;
    int[] sizes = new int[o.hidden.length + 2];
    sizes[0] = data.pixels();
    System.arraycopy(o.hidden, 0, sizes, 1, o.hidden.length);
    sizes[sizes.length - 1] = 10;
    int evalBatch = 500;
    Mlp mlp = new Mlp(sizes, Math.max(local, evalBatch));
    int p = mlp.parameterCount();
    float[] w = new float[p];
    float[] v = new float[p];
    float[] grad = new float[p + 2]; // + mean loss, hit count
    mlp.init(w, o.seed);
    int n = o.trainLimit > 0 ? Math.min(o.trainLimit, data.trainSize()) : data.trainSize();
    int steps = n / o.batch;
    if (steps == 0) {
      throw new IllegalArgumentException(n + " training samples make no step of the global "
          + "batch " + o.batch);
    }
    int[] order = new int[n];
    for (int i = 0; i < n; i++) {
      order[i] = i;
    }
    byte[] batchLabels = new byte[Math.max(local, evalBatch)];
    int[] correct = new int[1];
    List<Epoch> history = new ArrayList<>();
    long start = System.nanoTime();
    try (GradientAggregator agg = new GradientAggregator(comm, 25L << 20)) {
      agg.register(grad);
      for (int epoch = 1; epoch <= o.epochs; epoch++) {
        shuffle(order, o.seed * 31 + epoch);
        float lr = (float) (o.lr * Math.pow(o.lrDecay, epoch - 1));
        long t0 = System.nanoTime();
        long reduceNanos = 0;
        if (progress != null) {
          progress.epochStarted(epoch, o.epochs, steps);
        }
        double lossSum = 0;
        double hits = 0;
        for (int s = 0; s < steps; s++) {
          float[] x = mlp.input();
          for (int q = 0; q < local; q++) {
            int idx = order[s * o.batch + q * ranks + rank];
            batchLabels[q] = data.trainLabels()[idx];
            int src = idx * data.pixels();
            int dst = q * data.pixels();
            for (int k = 0; k < data.pixels(); k++) {
              x[dst + k] = (data.trainImages()[src + k] & 0xFF) * (1f / 255f);
            }
          }
          double loss = mlp.step(w, local, batchLabels, 0, grad, 1f / local, correct);
          grad[p] = (float) (loss / local);
          grad[p + 1] = correct[0];
          long r0 = System.nanoTime();
          agg.allReduce();
          reduceNanos += System.nanoTime() - r0;
          lossSum += grad[p];
          hits += grad[p + 1] * ranks;
          for (int i = 0; i < p; i++) {
            v[i] = o.momentum * v[i] + grad[i];
            w[i] -= lr * v[i];
          }
          if (progress != null) {
            progress.stepped();
          }
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        double testAcc = evaluate(comm, mlp, w, data, batchLabels, evalBatch);
        Epoch e = new Epoch(epoch, lossSum / steps, hits / ((double) steps * o.batch), testAcc,
            steps * (double) o.batch / seconds, reduceNanos / 1e9 / seconds, seconds,
            (System.nanoTime() - start) / 1e9);
        history.add(e);
        if (progress != null) {
          progress.epochEnded();
        }
        if (out != null) {
          out.printf("epoch %2d/%d  loss %.4f  train acc %.4f  test acc %.4f  %7.0f samples/s"
              + "  allreduce %4.1f%% of step time  %.1f s%n", epoch, o.epochs, e.loss(),
              e.trainAccuracy(), e.testAccuracy(), e.samplesPerSecond(),
              100 * e.allReduceShare(), e.seconds());
          out.flush();
        }
      }
    }
    return new Result(history, w);
  }

  /** Test accuracy: each rank scores every R-th test image, the hit counts are summed. */
  static double evaluate(Communicator comm, Mlp mlp, float[] w, FashionMnist data,
      byte[] labels, int batch) {
    int ranks = comm.size();
    int rank = comm.topologyRank();
    int[] correct = new int[1];
    long hits = 0;
    float[] x = mlp.input();
    int q = 0;
    for (int idx = rank; idx < data.testSize(); idx += ranks) {
      labels[q] = data.testLabels()[idx];
      int src = idx * data.pixels();
      for (int k = 0; k < data.pixels(); k++) {
        x[q * data.pixels() + k] = (data.testImages()[src + k] & 0xFF) * (1f / 255f);
      }
      q++;
      if (q == batch || idx + ranks >= data.testSize()) {
        mlp.forward(w, q, labels, 0, correct);
        hits += correct[0];
        q = 0;
      }
    }
    ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    b.putLong(0, hits);
    comm.allReduce(b, b, 1, DataType.I64, ReduceOp.SUM);
    return b.getLong(0) / (double) data.testSize();
  }

  private static void shuffle(int[] a, long seed) {
    Random r = new Random(seed);
    for (int i = a.length - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}
