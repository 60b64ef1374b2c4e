package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;

import io.treeline.comm.HostCommunicator;
import io.treeline.core.Handle;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.core.CollectiveException;
import io.treeline.kernels.CudaQueries;
import io.treeline.kernels.DevicePointers;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;

/**
 * How a slice of device memory crosses nodes: through pinned host memory and the host
 * {@link HostCommunicator} of the ranks with the same local index on every node (its double binary
 * trees over TCP). The slice moves in chunks, in a three-stage pipeline: every chunk's
 * device-to-host copy is enqueued at once (the copy engine runs them back to back); as each
 * lands, its allreduce goes to the host communicator (whose thread runs them in order, so the
 * network carries chunk c while the copy engine brings chunk c + 1); as each allreduce ends,
 * its host-to-device copy is enqueued. The GPU work after the stage is ordered behind the last
 * copy by the stream.
 */
final class HostStage implements AutoCloseable {
  private final HostCommunicator cross;
  private final long capacity;
  private final long chunkBytes;
  private final Pointer pinned = new Pointer();
  private final ByteBuffer host;
  private final CUevent[] landed;
  private final Handle[] handles;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();

  HostStage(HostCommunicator cross, long capacity, long chunkBytes) {
    this.cross = cross;
    this.capacity = capacity;
    this.chunkBytes = chunkBytes;
    int n = (int) ((capacity + chunkBytes - 1) / chunkBytes);
    boolean ok = false;
    try {
      cuMemAllocHost(pinned, capacity);
      host = pinned.getByteBuffer(0, capacity).order(ByteOrder.nativeOrder());
      landed = new CUevent[n];
      for (int i = 0; i < n; i++) {
        landed[i] = new CUevent();
        cuEventCreate(landed[i], CUevent_flags.CU_EVENT_DISABLE_TIMING);
      }
      handles = new Handle[n];
      ok = true;
    } finally {
      if (!ok) {
        close();
      }
    }
  }

  /**
   * Allreduce {@code count} elements at device address {@code slice} across the nodes, in
   * place, on {@code stream}. Returns once every host-to-device copy is enqueued.
   */
  void allReduce(long slice, long count, DataType type, ReduceOp op, CUstream stream,
      long deadline, int rank) {
    int es = type.size();
    long bytes = count * es;
    if (bytes > capacity) {
      throw new IllegalArgumentException("rank " + rank + ": a slice of " + bytes + " bytes "
          + "exceeds the staging buffer of " + capacity);
    }
    long per = Math.max(es, chunkBytes / es * es);
    int n = (int) Math.max(1, (bytes + per - 1) / per);
    for (int c = 0; c < n; c++) {
      long off = c * per;
      long b = Math.min(per, bytes - off);
      if (b > 0) {
        cuMemcpyDtoHAsync(pinned.withByteOffset(off), DevicePointers.at(slice + off), b, stream);
      }
      cuEventRecord(landed[c], stream);
    }
    for (int c = 0; c < n; c++) {
      long off = c * per;
      long b = Math.max(0, Math.min(per, bytes - off));
      waitFor(landed[c], deadline, rank, c);
      ByteBuffer chunk = host.slice((int) off, (int) b).order(ByteOrder.nativeOrder());
      handles[c] = cross.allReduceAsync(chunk, chunk, b / es, type, op);
    }
    for (int c = 0; c < n; c++) {
      long off = c * per;
      long b = Math.max(0, Math.min(per, bytes - off));
      handles[c].await(cross.config().timeout());
      handles[c] = null;
      if (b > 0) {
        cuMemcpyHtoDAsync(DevicePointers.at(slice + off), pinned.withByteOffset(off), b, stream);
      }
    }
  }

  private void waitFor(CUevent e, long deadline, int rank, int chunk) {
    while (true) {
      try {
        if (CudaQueries.done(e)) {
          idle.reset();
          return;
        }
      } catch (CudaException x) {
        throw new CollectiveException(rank, -1, "staging chunk " + chunk + " to the host",
            "the device-to-host copy failed: " + x.getMessage(), x);
      }
      if (System.nanoTime() - deadline > 0) {
        throw CollectiveException.timeout(rank, -1, "staging chunk " + chunk + " to the host",
            "this rank's GPU to finish the node's reduce-scatter and copy the slice out",
            cross.config().timeout());
      }
      idle.idle();
    }
  }

  @Override
  public void close() {
    cross.close();
    if (landed != null) {
      for (CUevent e : landed) {
        if (e != null) {
          try {
            cuEventDestroy(e);
          } catch (RuntimeException ignored) {
            // closing anyway
          }
        }
      }
    }
    try {
      cuMemFreeHost(pinned);
    } catch (RuntimeException ignored) {
      // never allocated
    }
  }
}
