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
import io.treeline.plan.Algorithm;
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
  private final Pointer pinned = new Pointer();
  private final ByteBuffer host;
  private final CUevent[] landed;
  private final Handle[] handles;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();

  HostStage(HostCommunicator cross, long capacity, long chunkBytes) {
    this.cross = cross;
    this.capacity = capacity;
    // a plan's stage chunks are chunkBytes rounded down to the 64-byte alignment, or smaller
    int n = (int) (capacity / Math.max(64, chunkBytes / 64 * 64) + 2);
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
   * Run the staged part of a {@code StagedHierarchical} plan on {@code stream}: every chunk
   * ({@code chunkOffset[c]}, {@code chunkCount[c]} elements of the device OUTPUT at
   * {@code output}) is copied to pinned host memory at once (the plan's stage-outs); as each
   * lands, its double binary tree allreduce goes to the host communicator of the slice's owners
   * (the plan's message steps for that chunk, which {@code StagedHierarchicalTest} shows are that
   * allreduce); as each ends, its host-to-device copy is enqueued (the plan's stage-in). Returns
   * once every copy back is enqueued; finishing (an AVG's divide) is the caller's, after.
   */
  void run(long output, long[] chunkOffset, long[] chunkCount, int chunks, DataType type,
      ReduceOp op, CUstream stream, long deadline, int rank) {
    if (chunks == 0) {
      return;
    }
    int es = type.size();
    long first = chunkOffset[0];
    long bytes = (chunkOffset[chunks - 1] + chunkCount[chunks - 1] - first) * es;
    if (bytes > capacity || chunks > landed.length) {
      throw new IllegalArgumentException("rank " + rank + ": " + chunks + " staging chunks of "
          + bytes + " bytes exceed the staging buffer of " + capacity + " bytes in "
          + landed.length + " chunks");
    }
    for (int c = 0; c < chunks; c++) {
      long host = (chunkOffset[c] - first) * es;
      cuMemcpyDtoHAsync(pinned.withByteOffset(host), DevicePointers.at(output
          + chunkOffset[c] * es), chunkCount[c] * es, stream);
      cuEventRecord(landed[c], stream);
    }
    for (int c = 0; c < chunks; c++) {
      int host = (int) ((chunkOffset[c] - first) * es);
      waitFor(landed[c], deadline, rank, c);
      ByteBuffer chunk = host(host, (int) (chunkCount[c] * es));
      handles[c] = cross.allReduceAsync(chunk, chunk, chunkCount[c], type, op, Algorithm.DBT);
    }
    for (int c = 0; c < chunks; c++) {
      long host = (chunkOffset[c] - first) * es;
      handles[c].await(cross.config().timeout());
      handles[c] = null;
      cuMemcpyHtoDAsync(DevicePointers.at(output + chunkOffset[c] * es),
          pinned.withByteOffset(host), chunkCount[c] * es, stream);
    }
  }

  private ByteBuffer host(int offset, int bytes) {
    return host.slice(offset, bytes).order(ByteOrder.nativeOrder());
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
