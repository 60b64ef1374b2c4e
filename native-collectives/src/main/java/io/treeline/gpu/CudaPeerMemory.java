package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import io.treeline.core.CallMismatchException;
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
 * {@link DeviceCommunicator#synchronize()} reports. Beside its flag each rank publishes its
 * call (sequence and descriptor hash, {@code FlagKernels.callWord}) and the kernel compares the
 * peers' with its own: a peer in another call (count, type, op, algorithm) is recorded there
 * too, and reported as a {@link CallMismatchException} naming both calls ({@link #mismatch}).
 *
 * <h2>Failure</h2>
 * {@link #abort} and {@link #leave} set the rank's abort word, which the peers' host waits see at
 * once; {@link #close} releases every mapping, event, buffer and segment of the rank.
 */
final class CudaPeerMemory implements LocalPeerMemory {
  /** Calls remembered by sequence, to name this rank's in a flag barrier's mismatch report. */
  private static final int RECENT = 64;

  private final int localRank;
  private final int localSize;
  private final SharedSegment own;
  private final SharedSegment[] segments;
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
  private final int[] ranks;
  private final CallDescriptor[] recent = new CallDescriptor[RECENT];
  private final long[] recentSequence = new long[RECENT];
  private long sequence;
  private CallDescriptor call;
  /** The call's sequence and descriptor hash, published beside the flags (flag sync). */
  private long callWord;

  /**
   * @param barrierKernel flag synchronisation (whole barriers only) instead of events
   * @param segments every local rank's shared-memory segment (flags, call, abort word)
   * @param pids every local rank's process id
   * @param events this rank's IPC events, {@code [parity * PHASES + phase]}
   * @param eventsOf every local rank's events as this process sees them
   * @param flagsOf device address of every local rank's flag words
   * @param ranks every local rank's bootstrap rank (named in errors)
   * @param closed whether the communicator was closed (ends host waits at once)
   * @param release frees the rank's GPU resources (mappings, events, buffers, segments)
   */
  CudaPeerMemory(boolean barrierKernel, int localRank, int localSize, SharedSegment[] segments,
      long[] pids, CUevent[] events, CUevent[][] eventsOf, long[] flagsOf, int[] ranks,
      FlagKernels flagKernels, CUstream stream, Duration timeout, BooleanSupplier closed,
      Runnable release) {
    this.localRank = localRank;
    this.localSize = localSize;
    this.own = segments[localRank];
    this.events = events;
    this.eventsOf = eventsOf;
    this.flagsOf = flagsOf;
    this.ranks = ranks;
    this.segments = segments;
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
    this.callWord = FlagKernels.callWord(sequence, call.hash32());
    recent[(int) (sequence % RECENT)] = call;
    recentSequence[(int) (sequence % RECENT)] = sequence;
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
    flagKernels.barrier(flagPtrs, localSize, localRank, value, callWord, timeout.toNanos(),
        flagsOf[localRank] + 8L * FlagKernels.STATUS_WORD, stream);
  }

  /**
   * The failure a flag barrier recorded when local rank {@code peer}'s call word
   * ({@code theirs}) at barrier {@code value} had this rank's sequence and another descriptor:
   * both calls named, this rank's from the calls it remembers, the peer's from its segment when
   * it is still in that call (else by its descriptor hash).
   */
  CallMismatchException mismatch(int rank, int peer, long value, long theirs) {
    long seq = value / PlanRunner.PHASES;
    CallDescriptor mine = recentSequence[(int) (seq % RECENT)] == seq
        ? recent[(int) (seq % RECENT)] : null;
    SharedSegment other = segments[peer];
    long[] words = new long[2]; // a failure path: allocating is fine here
    CallDescriptor published = other.readCall(seq, words)
        ? new CallDescriptor(words[0], words[1]) : null;
    String described = published != null && published.hash32() == (int) theirs
        ? published.describe() : String.format("descriptor hash %08x", (int) theirs);
    return new CallMismatchException(rank, ranks[peer], "GPU flag barrier of collective #" + seq
        + " phase " + value % PlanRunner.PHASES + " (local rank " + peer + ")", seq,
        mine != null ? mine.describe() : "descriptor hash " + String.format("%08x",
        (int) callWord), seq, described);
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
