package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import io.treeline.exec.CallDescriptor;
import io.treeline.exec.LocalPeerMemory;
import io.treeline.exec.PlanRunner;
import io.treeline.kernels.FlagKernels;
import io.treeline.kernels.ReduceKernels;
import io.treeline.transport.shm.PeerFlags;
import io.treeline.transport.shm.SharedSegment;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import jcuda.driver.CUevent;
import jcuda.driver.CUstream;

/**
 * The GPU path's peer memory behind the transport SPI ({@link LocalPeerMemory}): the registered
 * device buffers of a node's ranks, mapped into each other through CUDA IPC (or shared as
 * addresses by ranks of one process), and the synchronisation that orders the kernels reading
 * them, both set up by {@link DeviceCommunicator#create}. Peers are local ranks (the plans that
 * run on device memory are plans over the node's ranks). {@link DevicePlanRunner} compiles a
 * plan's Signal and Wait steps into calls of {@link #signal}, {@link #await} and
 * {@link #barrier}, enqueued on the rank's stream.
 *
 * <p>Values are {@code sequence * PHASES + phase}: the phase is {@code value % PHASES} and the
 * parity, the sequence's lowest bit, double-buffers the events, so that a peer one call ahead can
 * never overwrite what a late rank is about to wait for.
 *
 * <h2>Memory order</h2>
 * Events (ranks sharing a GPU, {@link DeviceOptions.Sync#EVENTS}): {@link #signal} records the
 * phase's IPC event on the stream, then publishes the value in the rank's shared-memory flag
 * (release); {@link #await} waits on the host for the peer's flag (acquire, with the deadline,
 * the peer's abort word and process, and the call-descriptor check of {@link PeerFlags}), then
 * makes the stream wait on the peer's event: every kernel the peer enqueued before its signal
 * runs before this rank's later kernels. Flags (distinct GPUs, {@link DeviceOptions.Sync#FLAGS}):
 * only whole-node {@link #barrier}s, one barrier kernel spinning on flags in peer memory; it gives
 * up after the timeout and leaves the peer and phase in the status words that
 * {@link DeviceCommunicator#synchronize()} reports.
 *
 * <h2>Failure</h2>
 * {@link #abort} and {@link #leave} set the rank's abort word, which the peers' host waits see at
 * once; {@link #close} releases every mapping, event, buffer and segment of the rank.
 */
final class CudaPeerMemory implements LocalPeerMemory {
  /** Flag slots per rank (one per local peer), then two words of barrier status. */
  static final int FLAG_SLOTS = FlagKernels.MAX_RANKS;

  private final int localRank;
  private final int localSize;
  private final SharedSegment own;
  private final CUevent[] events;
  private final CUevent[][] eventsOf;
  private final long[] flagsOf;
  private final CUstream stream;
  private final Duration timeout;
  /** Null with flag synchronisation: its barrier kernel has no host waits. */
  private final PeerFlags hostFlags;
  private final FlagKernels flagKernels;
  private final long[] flagPtrs = new long[ReduceKernels.MAX_INPUTS];
  private final Runnable release;
  private long sequence;
  private CallDescriptor call;

  /**
   * @param barrierKernel flag synchronisation (whole barriers only) instead of events
   * @param segments every local rank's shared-memory segment (flags, call, abort word)
   * @param pids every local rank's process id
   * @param events this rank's IPC events, {@code [parity * PHASES + phase]}
   * @param eventsOf every local rank's events as this process sees them
   * @param flagsOf device address of every local rank's flag words
   * @param closed whether the communicator was closed (ends host waits at once)
   * @param release frees the rank's GPU resources (mappings, events, buffers, segments)
   */
  CudaPeerMemory(boolean barrierKernel, int localRank, int localSize, SharedSegment[] segments,
      long[] pids, CUevent[] events, CUevent[][] eventsOf, long[] flagsOf,
      FlagKernels flagKernels, CUstream stream, Duration timeout, BooleanSupplier closed,
      Runnable release) {
    this.localRank = localRank;
    this.localSize = localSize;
    this.own = segments[localRank];
    this.events = events;
    this.eventsOf = eventsOf;
    this.flagsOf = flagsOf;
    this.flagKernels = flagKernels;
    this.stream = stream;
    this.timeout = timeout;
    this.release = release;
    this.hostFlags = barrierKernel ? null : new PeerFlags(localRank, segments, pids, timeout,
        closed);
  }

  @Override
  public void beginCall(long sequence, CallDescriptor call) {
    own.beginCall(sequence, call.count(), call.meta());
    this.sequence = sequence;
    this.call = call;
  }

  private static int event(long value) {
    int phase = (int) (value % PlanRunner.PHASES);
    int parity = (int) ((value / PlanRunner.PHASES) & 1);
    return parity * PlanRunner.PHASES + phase;
  }

  @Override
  public void signal(long value) {
    if (hostFlags == null) {
      throw new UnsupportedOperationException("flag sync runs whole barriers");
    }
    cuEventRecord(events[event(value)], stream);
    own.signal(value); // release: a peer that sees it may wait on the recorded event
  }

  @Override
  public void await(int peer, long value, long deadline, String phase) {
    if (hostFlags == null) {
      throw new UnsupportedOperationException("flag sync runs whole barriers");
    }
    hostFlags.await(peer, value, deadline, phase, sequence, call);
    cuStreamWaitEvent(stream, eventsOf[peer][event(value)], 0);
  }

  @Override
  public void barrier(int[] group, int self, long value, long deadline, String phase) {
    if (hostFlags != null) {
      LocalPeerMemory.super.barrier(group, self, value, deadline, phase);
      return;
    }
    if (group.length != localSize) {
      throw new IllegalArgumentException("flag barriers span the whole node; " + phase
          + " names " + group.length + " of " + localSize + " ranks");
    }
    for (int p = 0; p < localSize; p++) {
      flagPtrs[p] = flagsOf[p];
    }
    flagKernels.barrier(flagPtrs, localSize, localRank, value, timeout.toNanos(),
        flagsOf[localRank] + 8L * FLAG_SLOTS, stream);
  }

  @Override
  public boolean barriersOnly() {
    return hostFlags == null;
  }

  @Override
  public void abort(String reason) {
    own.abort(reason);
  }

  @Override
  public void close() {
    release.run();
  }
}
