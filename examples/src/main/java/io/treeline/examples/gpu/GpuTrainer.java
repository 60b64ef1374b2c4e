package io.treeline.examples.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static jcuda.driver.JCudaDriver.cuMemsetD8;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import io.treeline.core.DataType;
import io.treeline.core.DeviceCommunicator;
import io.treeline.core.DeviceGradientAggregator;
import io.treeline.core.ReduceOp;
import io.treeline.examples.mnist.FashionMnist;
import io.treeline.examples.mnist.Mlp;
import io.treeline.examples.mnist.Trainer;
import io.treeline.kernels.CudaModule;
import io.treeline.kernels.DevicePointers;
import io.treeline.kernels.GpuDevices;
import io.treeline.kernels.TrainingKernels;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The CPU job's data-parallel training ({@link Trainer}: same MLP, initialisation, shuffle,
 * batch split, learning-rate decay and momentum SGD) with everything on the GPU: the data set is
 * uploaded once, a batch is gathered on the device through the epoch's permutation (uploaded
 * once per epoch, 4 bytes per sample), the step is TF32 GEMMs with fused epilogues
 * ({@link TrainingKernels}), and one flat gradient buffer (the CPU layout plus two slots, mean
 * loss and hits) is averaged every step by {@link DeviceGradientAggregator}.
 *
 * <p>Overlap (like DDP): the gradient is two buckets, the last layer (with the two figures) and
 * the rest. With overlap on, the step runs on a stream of its own; the last layer's bucket starts
 * its allreduce on the communicator's stream as soon as its gradient is written, while the
 * earlier layers' backward runs; the update waits for both. With overlap off, everything runs on
 * the communicator's stream, one after the other. The allreduce share is measured with CUDA
 * events around each bucket's allreduce on the communicator's stream.
 *
 * <p>Every rank applies the same averaged gradient, so the replicas stay bit-identical; the run
 * checks that at the end (CRC32 of the weights, max and min over the ranks).
 */
public final class GpuTrainer {
  private static final int CLASSES = 10;

  /** One epoch as the CPU job reports it, plus the mean step time. */
  public record GpuEpoch(Trainer.Epoch epoch, double stepMillis) {
  }

  /** The CPU job's result ({@link Trainer.Result}: the CLI writes it as it does the CPU's). */
  /**
   * What a run did; {@code gemm} names the GEMM kernels it ran ({@link TrainingKernels#gemmPath},
   * with the reason the TMA kernels were off where the device has wgmma but they did not run).
   */
  public record Outcome(Trainer.Result result, List<GpuEpoch> epochs, String gpu, int ranks,
      boolean overlap, String gemm) {
  }

  private GpuTrainer() {
  }

  /**
   * Null when this process can train on a GPU (a CUDA driver, a device and the fatbin), else
   * why not: what {@code ./treeline train --gpu} prints before it fails.
   */
  public static String unavailable() {
    String noDriver = GpuDevices.initDriver();
    if (noDriver != null) {
      return noDriver;
    }
    int[] count = new int[1];
    JCudaDriver.cuDeviceGetCount(count);
    if (count[0] == 0) {
      return "the CUDA driver sees no GPU";
    }
    try {
      CudaModule.fatbin();
    } catch (IOException e) {
      return e.getMessage();
    }
    return null;
  }

  /** The GPU a rank trains on: the given ordinal, or rank modulo the GPUs present. */
  public static int ordinalFor(int requested, int rank, int gpus) {
    if (requested >= 0) {
      if (requested >= gpus) {
        throw new IllegalArgumentException("GPU " + requested + " requested; this machine has "
            + gpus);
      }
      return requested;
    }
    if (gpus < 1) {
      throw new IllegalArgumentException("no GPU to place rank " + rank + " on");
    }
    return rank % gpus;
  }

  /** Trains on {@code comm}'s GPU; collective: every rank calls it with the same options. */
  public static Outcome train(DeviceCommunicator comm, FashionMnist data, GpuTrainOptions go,
      PrintStream out, Trainer.Progress progress) {
    Trainer.Options o = go.train();
    int ranks = comm.size();
    int rank = comm.topologyRank();
    int local = MlpLayout.localBatch(o.batch(), ranks);
    MlpLayout layout = MlpLayout.of(data.pixels(), o.hidden(), CLASSES);
    try (Device d = new Device(comm, data, layout, local, go.overlap(), go.gemm())) {
      return d.train(o, rank, ranks, out, progress);
    }
  }

  /** The device state of one run; everything it allocates it frees in {@link #close()}. */
  private static final class Device implements AutoCloseable {
    private final DeviceCommunicator comm;
    private final FashionMnist data;
    private final MlpLayout layout;
    private final int local;
    private final boolean overlap;
    /** This example's own kernels (training math), on the communicator's GPU. */
    private final CudaModule module;
    private final TrainingKernels k;
    private final List<CUdeviceptr> memory = new ArrayList<>();
    private final List<CUevent> events = new ArrayList<>();
    private final CUstream commStream;
    private CUstream ownStream;
    private final CUstream compute;
    private final long w;
    private final long v;
    private final long grad;
    private final long[] act;
    private final long[] delta;
    private final long labels;
    private final long trainImages;
    private final long trainLabels;
    private final long testImages;
    private final long testLabels;
    private final long order;
    private final long epochStats;
    /** Two floats per evaluation chunk (loss, hits), then {@link #sumAt} and {@link #crcAt}. */
    private final long scratch;
    /** One double: the test hits summed over the ranks. */
    private final long sumAt;
    /** Two longs: the weights' CRC32, max and min over the ranks. */
    private final long crcAt;
    private final int maxRows;

    Device(DeviceCommunicator comm, FashionMnist data, MlpLayout layout, int local,
        boolean overlap, String gemm) {
      this.comm = comm;
      this.data = data;
      this.layout = layout;
      this.local = local;
      this.overlap = overlap;
      try {
        this.module = new CudaModule(comm.deviceOrdinal()); // the same primary context
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      this.k = new TrainingKernels(module);
      if (!gemm.equals("auto")) {
        k.setTmaGemm(false);
        k.setHopperGemm(gemm.equals("wgmma"));
      }
      this.commStream = DevicePointers.stream(comm.stream());
      if (overlap) {
        ownStream = new CUstream();
        cuStreamCreate(ownStream, CUstream_flags.CU_STREAM_DEFAULT);
      }
      this.compute = overlap ? ownStream : commStream;
      try {
        long p = layout.params();
        w = alloc(4 * p);
        v = alloc(4 * p);
        grad = alloc(4 * (p + 2));
        cuMemsetD8(DevicePointers.at(v), (byte) 0, 4 * p);
        maxRows = Math.max(local, MlpLayout.EVAL_BATCH);
        int[] sizes = layout.sizes();
        act = new long[sizes.length];
        delta = new long[sizes.length];
        for (int l = 0; l < sizes.length; l++) {
          act[l] = alloc(4L * maxRows * sizes[l]);
          delta[l] = l == 0 ? 0 : alloc(4L * maxRows * sizes[l]);
        }
        labels = alloc(maxRows);
        trainImages = upload(data.trainImages());
        trainLabels = upload(data.trainLabels());
        testImages = upload(data.testImages());
        testLabels = upload(data.testLabels());
        order = alloc(4L * data.trainSize());
        epochStats = alloc(16);
        long chunkBytes = 8L * Math.max(1, MlpLayout.evalChunks(data.testSize()));
        scratch = alloc(chunkBytes + 8 + 16);
        sumAt = scratch + chunkBytes; // 8-aligned: chunkBytes is a multiple of 8
        crcAt = sumAt + 8;
      } catch (RuntimeException | Error e) {
        close();
        throw e;
      }
    }

    private long alloc(long bytes) {
      CUdeviceptr p = new CUdeviceptr();
      cuMemAlloc(p, Math.max(1, bytes));
      memory.add(p);
      return DevicePointers.address(p);
    }

    private long upload(byte[] a) {
      long p = alloc(a.length);
      cuMemcpyHtoD(DevicePointers.at(p), Pointer.to(a), a.length);
      return p;
    }

    private CUevent event() {
      CUevent e = new CUevent();
      cuEventCreate(e, 0);
      events.add(e);
      return e;
    }

    /** The GEMM kernels of this run, and why not TMA where wgmma runs without it. */
    String gemmPath() {
      String path = k.gemmPath();
      return path.equals("wgmma") && k.tmaAbsent() != null
          ? path + " (TMA off: " + k.tmaAbsent() + ")" : path;
    }

    Outcome train(Trainer.Options o, int rank, int ranks, PrintStream out,
        Trainer.Progress progress) {
      if (out != null && rank == 0) {
        out.println("gemm kernels: " + gemmPath());
      }
      int[] sizes = layout.sizes();
      int layers = layout.layers();
      long p = layout.params();
      float[] host = new float[(int) p];
      new Mlp(sizes, 1).init(host, o.seed()); // the CPU job's initial weights, bit for bit
      cuMemcpyHtoD(DevicePointers.at(w), Pointer.to(host), 4 * p);
      int n = o.trainLimit() > 0 ? Math.min(o.trainLimit(), data.trainSize()) : data.trainSize();
      int steps = n / o.batch();
      if (steps == 0) {
        throw new IllegalArgumentException(n + " training samples make no step of "
            + o.batch());
      }
      // last layer (+ the loss and hit slots) and the rest: the bucket that overlaps
      DeviceGradientAggregator last = new DeviceGradientAggregator(comm, DataType.F32);
      DeviceGradientAggregator rest = new DeviceGradientAggregator(comm, DataType.F32);
      int top = layers - 1;
      last.register(grad + 4 * layout.wOff()[top], (long) sizes[top] * sizes[top + 1]
          + sizes[top + 1] + 2); // W, b and the two slots are contiguous at the end
      if (top > 0) {
        rest.register(grad, layout.wOff()[top]);
      }
      CUevent lastReady = event();
      CUevent restReady = event();
      CUevent reduced = event();
      CUevent[] marks = new CUevent[4 * steps];
      for (int i = 0; i < marks.length; i++) {
        marks[i] = event();
      }
      int[] perm = new int[n];
      for (int i = 0; i < n; i++) {
        perm[i] = i;
      }
      List<Trainer.Epoch> history = new ArrayList<>();
      List<GpuEpoch> gpuEpochs = new ArrayList<>();
      double[] stats = new double[2];
      float[] ms = new float[1];
      long start = System.nanoTime();
      for (int epoch = 1; epoch <= o.epochs(); epoch++) {
        if (progress != null) {
          progress.epochStarted(epoch, o.epochs(), steps);
        }
        shuffle(perm, o.seed() * 31 + epoch); // the CPU job's order
        synchronizeAll();
        cuMemcpyHtoD(DevicePointers.at(order), Pointer.to(perm), 4L * n);
        cuMemsetD8(DevicePointers.at(epochStats), (byte) 0, 16);
        float lr = (float) (o.lr() * Math.pow(o.lrDecay(), epoch - 1));
        long t0 = System.nanoTime();
        for (int s = 0; s < steps; s++) {
          int base = (int) MlpLayout.position(s, o.batch(), 0, ranks, rank);
          k.gatherBatch(trainImages, trainLabels, order, base, ranks, local, sizes[0], act[0],
              labels, compute);
          forward(local);
          k.softmaxCrossEntropy(act[layers], labels, local, CLASSES, delta[layers], 1f / local,
              grad + 4 * p, 1f / local, compute);
          for (int l = top; l >= 0; l--) {
            backward(l, local);
            if (l == top) {
              cuEventRecord(lastReady, compute);
            }
          }
          cuEventRecord(restReady, compute);
          if (overlap) {
            cuStreamWaitEvent(commStream, lastReady, 0);
          }
          cuEventRecord(marks[4 * s], commStream);
          last.allReduce();
          cuEventRecord(marks[4 * s + 1], commStream);
          if (overlap) {
            cuStreamWaitEvent(commStream, restReady, 0);
          }
          cuEventRecord(marks[4 * s + 2], commStream);
          if (top > 0) {
            rest.allReduce();
          }
          cuEventRecord(marks[4 * s + 3], commStream);
          if (overlap) {
            cuEventRecord(reduced, commStream);
            cuStreamWaitEvent(compute, reduced, 0);
          }
          k.sgdMomentum(w, v, grad, p, lr, o.momentum(), epochStats, compute);
          if (progress != null) {
            progress.stepped();
          }
        }
        synchronizeAll();
        double seconds = (System.nanoTime() - t0) / 1e9;
        double reduceSeconds = 0;
        for (int s = 0; s < steps; s++) {
          cuEventElapsedTime(ms, marks[4 * s], marks[4 * s + 1]);
          reduceSeconds += ms[0] / 1e3;
          cuEventElapsedTime(ms, marks[4 * s + 2], marks[4 * s + 3]);
          reduceSeconds += ms[0] / 1e3;
        }
        cuMemcpyDtoH(Pointer.to(stats), DevicePointers.at(epochStats), 16);
        double testAcc = evaluate(rank, ranks);
        Trainer.Epoch e = new Trainer.Epoch(epoch, stats[0] / steps,
            stats[1] * ranks / ((double) steps * o.batch()), testAcc,
            steps * (double) o.batch() / seconds, Math.min(1, reduceSeconds / seconds), seconds,
            (System.nanoTime() - start) / 1e9);
        history.add(e);
        gpuEpochs.add(new GpuEpoch(e, seconds * 1e3 / steps));
        if (progress != null) {
          progress.epochEnded();
        }
        if (out != null) {
          out.printf("epoch %2d/%d  loss %.4f  train acc %.4f  test acc %.4f  %7.0f samples/s"
              + "  allreduce %4.1f%% of step time  %.1f s  step %.3f ms%n", epoch, o.epochs(),
              e.loss(), e.trainAccuracy(), e.testAccuracy(), e.samplesPerSecond(),
              100 * e.allReduceShare(), e.seconds(), seconds * 1e3 / steps);
          out.flush();
        }
      }
      cuMemcpyDtoH(Pointer.to(host), DevicePointers.at(w), 4 * p);
      checkReplicas(host, rank, ranks, out);
      return new Outcome(new Trainer.Result(history, host), gpuEpochs, comm.gpu(), ranks,
          overlap, gemmPath());
    }

    private void forward(int m) {
      int[] sizes = layout.sizes();
      int layers = layout.layers();
      for (int l = 0; l < layers; l++) {
        int in = sizes[l];
        int o = sizes[l + 1];
        k.gemm(act[l], false, in, w + 4 * layout.wOff()[l], false, o, act[l + 1], o, m, o, in,
            w + 4 * layout.bOff()[l], l < layers - 1, 0, 0, compute);
      }
    }

    /** Layer l's weight and bias gradients and, below the first layer, dZ of layer l - 1. */
    private void backward(int l, int m) {
      int[] sizes = layout.sizes();
      int in = sizes[l];
      int o = sizes[l + 1];
      k.gemm(act[l], true, in, delta[l + 1], false, o, grad + 4 * layout.wOff()[l], o, in, o, m,
          0, false, 0, 0, compute); // dW = A^T dZ
      k.columnSums(delta[l + 1], m, o, o, grad + 4 * layout.bOff()[l], compute);
      if (l > 0) { // dZ_l = (dZ_{l+1} W^T) where the unit was on (ReLU)
        k.gemm(delta[l + 1], false, o, w + 4 * layout.wOff()[l], true, o, delta[l], in, m, in,
            o, 0, false, act[l], in, compute);
      }
    }

    /** Test accuracy: each rank scores every R-th test image; the hit counts are summed. */
    private double evaluate(int rank, int ranks) {
      int share = MlpLayout.testShare(data.testSize(), rank, ranks);
      int chunks = MlpLayout.evalChunks(share);
      for (int c = 0; c < chunks; c++) {
        int m = Math.min(MlpLayout.EVAL_BATCH, share - c * MlpLayout.EVAL_BATCH);
        int base = rank + c * MlpLayout.EVAL_BATCH * ranks;
        k.gatherBatch(testImages, testLabels, 0, base, ranks, m, layout.sizes()[0], act[0],
            labels, compute);
        forward(m);
        k.softmaxCrossEntropy(act[layout.layers()], labels, m, CLASSES, 0, 0f,
            scratch + 8L * c, 0f, compute);
      }
      synchronizeAll();
      float[] st = new float[2 * Math.max(1, chunks)];
      if (chunks > 0) {
        cuMemcpyDtoH(Pointer.to(st), DevicePointers.at(scratch), 8L * chunks);
      }
      double hits = 0;
      for (int c = 0; c < chunks; c++) {
        hits += st[2 * c + 1];
      }
      double[] sum = {hits};
      cuMemcpyHtoD(DevicePointers.at(sumAt), Pointer.to(sum), 8);
      comm.allReduce(sumAt, sumAt, 1, DataType.F64, ReduceOp.SUM);
      comm.synchronize();
      cuMemcpyDtoH(Pointer.to(sum), DevicePointers.at(sumAt), 8);
      return sum[0] / data.testSize();
    }

    private void checkReplicas(float[] weights, int rank, int ranks, PrintStream out) {
      ByteBuffer b = ByteBuffer.allocate(4 * weights.length).order(ByteOrder.LITTLE_ENDIAN);
      b.asFloatBuffer().put(weights);
      CRC32 crc = new CRC32();
      crc.update(b.array());
      long[] v2 = {crc.getValue(), crc.getValue()};
      long at = crcAt;
      cuMemcpyHtoD(DevicePointers.at(at), Pointer.to(v2), 16);
      comm.allReduce(at, at, 1, DataType.I64, ReduceOp.MAX);
      comm.allReduce(at + 8, at + 8, 1, DataType.I64, ReduceOp.MIN);
      comm.synchronize();
      cuMemcpyDtoH(Pointer.to(v2), DevicePointers.at(at), 16);
      if (v2[0] != v2[1]) {
        throw new IllegalStateException("rank " + rank + ": the replicas differ after training "
            + "(weight CRC32 max " + Long.toHexString(v2[0]) + ", min "
            + Long.toHexString(v2[1]) + " over " + ranks + " ranks)");
      }
      if (out != null) {
        out.printf("replicas identical on all %d ranks (weights CRC32 %08x)%n", ranks, v2[0]);
      }
    }

    private void synchronizeAll() {
      if (ownStream != null) {
        cuStreamSynchronize(ownStream);
      }
      comm.synchronize();
    }

    @Override
    public void close() {
      module.makeCurrent();
      try {
        if (ownStream != null) {
          cuStreamSynchronize(ownStream);
        }
        cuStreamSynchronize(commStream);
      } catch (RuntimeException e) {
        // a failed step: free what we hold all the same
      }
      for (CUevent e : events) {
        cuEventDestroy(e);
      }
      for (CUdeviceptr m : memory) {
        cuMemFree(m);
      }
      k.close();
      if (ownStream != null) {
        cuStreamDestroy(ownStream);
      }
      module.close();
    }
  }

  static void shuffle(int[] a, long seed) {
    Random r = new Random(seed);
    for (int i = a.length - 1; i > 0; i--) {
      int j = r.nextInt(i + 1);
      int t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }
}
