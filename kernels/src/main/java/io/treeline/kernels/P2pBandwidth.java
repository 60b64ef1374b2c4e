package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxEnablePeerAccess;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceCanAccessPeer;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyPeerAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD8;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jcuda.CudaException;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * The measured peer-copy matrix: for every (source GPU i, destination GPU j) the bandwidth of
 * a {@code cuMemcpyPeerAsync} from i's memory to j's, and on the diagonal a device-local
 * {@code cuMemcpyDtoDAsync}. Measured because the link class is only a promise: seed 004's
 * lesson is that {@code cuDeviceCanAccessPeer} says yes on paths that are slow.
 *
 * <p>Each figure is bytes copied per second (GB/s = 1e9 B/s), one direction, as CUDA's
 * p2pBandwidthLatencyTest counts them: every byte is read once and written once, so on the
 * diagonal the device's memory moves twice the figure. Copies run on a stream of the source's
 * primary context and are timed with events on it; peer access is enabled where
 * {@code cuDeviceCanAccessPeer} allows, otherwise the driver stages through host memory (the
 * matrix says which). Warm-up copies first, then the median of the timed repetitions; small
 * messages are timed as a batch of copies between two events, so the event resolution
 * (about 0.5 us) does not dominate.
 */
public final class P2pBandwidth {
  private static final long BATCH_BYTES = 64L << 20;
  private static final int MAX_BATCH = 64;

  private P2pBandwidth() {
  }

  /**
   * One message size: {@code gbps[src][dst]} (NaN where the pair failed, with
   * {@code error[src][dst]} saying why), {@code peerAccess[src][dst]} whether the copy went
   * directly (peer access enabled) rather than through the host.
   */
  public record Matrix(long bytes, int repetitions, int copiesPerRepetition, double[][] gbps,
      boolean[][] peerAccess, String[][] error) {
  }

  /** One matrix per size, or the reason nothing was measured. */
  public record Result(List<Matrix> matrices, String unavailable) {
  }

  /** 1 MiB and 64 MiB, 3 warm-ups and 10 timed repetitions: what {@code topo --measure} runs. */
  public static Result measure() {
    return measure(new long[] {1L << 20, 64L << 20}, 3, 10);
  }

  /** Measures every pair at each size; never throws for GPU trouble (see {@link Result}). */
  public static Result measure(long[] sizes, int warmup, int repetitions) {
    if (sizes.length == 0 || repetitions < 1 || warmup < 0) {
      throw new IllegalArgumentException("need at least one size and one repetition");
    }
    String why = GpuDevices.initDriver();
    if (why != null) {
      return new Result(List.of(), why);
    }
    int n;
    try {
      int[] count = new int[1];
      cuDeviceGetCount(count);
      n = count[0];
    } catch (CudaException e) {
      return new Result(List.of(), "cuDeviceGetCount failed: " + e.getMessage());
    }
    if (n == 0) {
      return new Result(List.of(), "the CUDA driver sees no device");
    }
    long max = Arrays.stream(sizes).max().getAsLong();
    Gpus g = new Gpus(n);
    try {
      String setup = g.open(max);
      if (setup != null) {
        return new Result(List.of(), setup);
      }
      List<Matrix> out = new ArrayList<>();
      for (long size : sizes) {
        out.add(measureSize(g, size, warmup, repetitions));
      }
      return new Result(List.copyOf(out), null);
    } finally {
      g.close();
    }
  }

  private static Matrix measureSize(Gpus g, long size, int warmup, int repetitions) {
    int n = g.n;
    int batch = (int) Math.max(1, Math.min(MAX_BATCH, BATCH_BYTES / size));
    double[][] gbps = new double[n][n];
    String[][] error = new String[n][n];
    for (int src = 0; src < n; src++) {
      for (int dst = 0; dst < n; dst++) {
        try {
          gbps[src][dst] = measurePair(g, src, dst, size, warmup, repetitions, batch);
        } catch (CudaException e) {
          gbps[src][dst] = Double.NaN;
          error[src][dst] = "copy of " + size + " B from GPU " + src + " to GPU " + dst
              + " failed: " + e.getMessage();
        }
      }
    }
    boolean[][] peer = new boolean[n][];
    for (int i = 0; i < n; i++) {
      peer[i] = g.peer[i].clone();
    }
    return new Matrix(size, repetitions, batch, gbps, peer, error);
  }

  private static double measurePair(Gpus g, int src, int dst, long size, int warmup,
      int repetitions, int batch) {
    cuCtxSetCurrent(g.ctx[src]);
    CUstream s = g.stream[src];
    for (int w = 0; w < warmup; w++) {
      copy(g, src, dst, size, s);
    }
    cuStreamSynchronize(s);
    double[] rate = new double[repetitions];
    float[] ms = new float[1];
    for (int r = 0; r < repetitions; r++) {
      cuEventRecord(g.start[src], s);
      for (int b = 0; b < batch; b++) {
        copy(g, src, dst, size, s);
      }
      cuEventRecord(g.stop[src], s);
      cuEventSynchronize(g.stop[src]);
      cuEventElapsedTime(ms, g.start[src], g.stop[src]);
      rate[r] = (double) size * batch / (ms[0] * 1e-3) / 1e9;
    }
    return median(rate);
  }

  private static void copy(Gpus g, int src, int dst, long size, CUstream s) {
    if (src == dst) {
      cuMemcpyDtoDAsync(g.dst[src], g.src[src], size, s);
    } else {
      cuMemcpyPeerAsync(g.dst[dst], g.ctx[dst], g.src[src], g.ctx[src], size, s);
    }
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int m = s.length / 2;
    return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  /** Every GPU's primary context, buffers, stream and events; closed whatever happened. */
  private static final class Gpus implements AutoCloseable {
    final int n;
    final CUdevice[] dev;
    final CUcontext[] ctx;
    final CUdeviceptr[] src;
    final CUdeviceptr[] dst;
    final CUstream[] stream;
    final CUevent[] start;
    final CUevent[] stop;
    final boolean[][] peer;

    Gpus(int n) {
      this.n = n;
      dev = new CUdevice[n];
      ctx = new CUcontext[n];
      src = new CUdeviceptr[n];
      dst = new CUdeviceptr[n];
      stream = new CUstream[n];
      start = new CUevent[n];
      stop = new CUevent[n];
      peer = new boolean[n][n];
    }

    /** Null when every GPU is ready, else what failed on which GPU. */
    String open(long bytes) {
      int i = 0;
      String phase = "primary context";
      try {
        for (; i < n; i++) {
          phase = "primary context";
          CUdevice d = new CUdevice();
          cuDeviceGet(d, i);
          CUcontext c = new CUcontext();
          cuDevicePrimaryCtxRetain(c, d);
          dev[i] = d;
          ctx[i] = c;
          cuCtxSetCurrent(c);
          phase = "two buffers of " + bytes + " B";
          src[i] = alloc(bytes);
          dst[i] = alloc(bytes);
          cuMemsetD8(src[i], (byte) (0x11 * (i + 1)), bytes);
          phase = "stream and events";
          stream[i] = new CUstream();
          cuStreamCreate(stream[i], CUstream_flags.CU_STREAM_NON_BLOCKING);
          start[i] = new CUevent();
          cuEventCreate(start[i], CUevent_flags.CU_EVENT_DEFAULT);
          stop[i] = new CUevent();
          cuEventCreate(stop[i], CUevent_flags.CU_EVENT_DEFAULT);
        }
        for (i = 0; i < n; i++) {
          phase = "peer access";
          cuCtxSetCurrent(ctx[i]);
          for (int j = 0; j < n; j++) {
            int[] can = new int[1];
            if (j != i) {
              cuDeviceCanAccessPeer(can, dev[i], dev[j]);
            }
            peer[i][j] = j == i || (can[0] == 1 && enablePeer(ctx[j]));
          }
        }
        return null;
      } catch (CudaException e) {
        return "setting up GPU " + i + " for the P2P measurement (" + phase + ") failed: "
            + e.getMessage();
      }
    }

    private static CUdeviceptr alloc(long bytes) {
      CUdeviceptr p = new CUdeviceptr();
      cuMemAlloc(p, bytes);
      return p;
    }

    /** Lets the current context read and write {@code peerCtx}'s memory directly. */
    private static boolean enablePeer(CUcontext peerCtx) {
      try {
        cuCtxEnablePeerAccess(peerCtx, 0);
        return true;
      } catch (CudaException e) {
        // someone in this process enabled it before us: that is what we wanted
        return String.valueOf(e.getMessage()).contains("ALREADY_ENABLED");
      }
    }

    @Override
    public void close() {
      for (int i = 0; i < n; i++) {
        if (ctx[i] == null) {
          continue;
        }
        try {
          cuCtxSetCurrent(ctx[i]);
          if (stream[i] != null) {
            cuStreamSynchronize(stream[i]);
            cuStreamDestroy(stream[i]);
          }
          if (start[i] != null) {
            cuEventDestroy(start[i]);
          }
          if (stop[i] != null) {
            cuEventDestroy(stop[i]);
          }
          if (src[i] != null) {
            cuMemFree(src[i]);
          }
          if (dst[i] != null) {
            cuMemFree(dst[i]);
          }
          cuDevicePrimaryCtxRelease(dev[i]);
        } catch (CudaException e) {
          System.err.println("P2P measurement: releasing GPU " + i + " failed: "
              + e.getMessage());
        }
      }
    }
  }
}
