package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;

import io.treeline.comm.HostCommunicator;
import io.treeline.core.ReduceOp;
import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.HostStaging;
import io.treeline.core.CollectiveException;
import io.treeline.kernels.CudaQueries;
import io.treeline.kernels.DevicePointers;
import io.treeline.plan.Plan;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;

/**
 * How a slice of device memory crosses nodes: the staged part of a {@code StagedHierarchical}
 * plan, run by the plan's own steps. This is the plan's STAGE buffer (pinned host memory) and its
 * copies ({@link HostStaging}): a stage-out is a device-to-host copy enqueued on the stream and
 * an event recorded after it, a stage-in a host-to-device copy (and, when it finishes an AVG,
 * the divide on the GPU). The message steps between them run over the network link of the host
 * {@link HostCommunicator} of the ranks with the same local index on every node
 * ({@link HostCommunicator#runStaged}, an {@code exec.StagedRunner}), which owns the TCP links,
 * their descriptor check and the abort path. The plan stages every chunk out first, so the copy
 * engine runs the copies back to back; the runner waits for a chunk's event only before that
 * chunk's first message step, so the network carries chunk c while the copy engine brings chunk
 * c + 1 and takes chunk c - 1 back. The GPU work after the stage is ordered behind the last copy
 * by the stream.
 */
final class HostStage implements HostStaging, AutoCloseable {
  /** Finishes a chunk that a stage-in copied back (an AVG's divide), on the stream. */
  interface Finish {
    void chunk(long offset, long count);
  }

  private final HostCommunicator cross;
  private final long capacity;
  private final Pointer pinned = new Pointer();
  private final ByteBuffer host;
  private final CUevent[] landed;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();
  // the call in progress (one at a time, on the communicator's thread)
  private long output;
  private int es;
  private CUstream stream;
  private int rank;
  private Finish finish;

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
      ok = true;
    } finally {
      if (!ok) {
        close();
      }
    }
  }

  /** The slice owners' communicator's topology rank of the owner on node {@code node}. */
  int linkRankOfNode(int node) {
    return cross.topologyRankOf(node);
  }

  /**
   * Run steps {@code [from, to)} of plan rank {@code rank}'s steps of {@code plan}, its staged
   * part, on the device OUTPUT at {@code output} and {@code stream}: the stage copies enqueued
   * here, the message steps on the host communicator of the slice's owners ({@code linkPeer}:
   * plan rank to that communicator's topology rank). Returns once every copy back (and every
   * finish) is enqueued.
   */
  void run(Plan plan, int rank, int from, int to, int[] linkPeer, long output, ReduceOp op,
      CUstream stream, long deadline, Finish finish) {
    this.output = output;
    this.es = plan.type().size();
    this.stream = stream;
    this.rank = rank;
    this.finish = finish;
    cross.runStaged(plan, rank, from, to, linkPeer, this, op, deadline);
  }

  @Override
  public ByteBuffer buffer() {
    return host;
  }

  @Override
  public void begin(int chunks, long bytes) {
    if (bytes > capacity || chunks > landed.length) {
      throw new IllegalArgumentException("rank " + rank + ": " + chunks + " staging chunks of "
          + bytes + " bytes exceed the staging buffer of " + capacity + " bytes in "
          + landed.length + " chunks");
    }
  }

  @Override
  public void stageOut(int chunk, long offset, long count, long at) {
    cuMemcpyDtoHAsync(pinned.withByteOffset(at), DevicePointers.at(output + offset * es),
        count * es, stream);
    cuEventRecord(landed[chunk], stream);
  }

  @Override
  public void awaitStaged(int chunk, long deadline) {
    waitFor(landed[chunk], deadline, rank, chunk);
  }

  @Override
  public void stageIn(int chunk, long offset, long count, long at, boolean finished) {
    cuMemcpyHtoDAsync(DevicePointers.at(output + offset * es), pinned.withByteOffset(at),
        count * es, stream);
    if (finished) {
      finish.chunk(offset, count);
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
