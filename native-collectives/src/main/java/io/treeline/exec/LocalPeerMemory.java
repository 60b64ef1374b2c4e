package io.treeline.exec;


/**
 * Memory that the ranks of one node map into each other, and the flags that order their access
 * to it: shared-memory segments on the host ({@code transport.shm}), CUDA IPC mappings on GPUs
 * (the GPU path), plain buffers for ranks that are threads ({@code transport.inprocess}).
 * A plan's peer-memory steps ({@code ReduceFrom}, {@code CopyFrom}) read a peer's registered
 * buffers in place; its {@code Signal} and {@code Wait} steps become {@link #signal} and
 * {@link #await}.
 *
 * <p>Peers are named by plan rank (node-major order over the whole job); only ranks of this
 * rank's node are valid.
 *
 * <h2>Memory order</h2>
 * {@link #signal} publishes with release semantics and {@link #await} returns after an acquire
 * read that saw the value: every write this rank made to its registered buffers before
 * signalling v is visible to a peer once its {@code await(self, v)} returns (on a GPU: every
 * kernel this rank enqueued before the signal is ordered before the peer's later kernels).
 * Flag values only grow ({@code sequence * PHASES + phase}).
 *
 * <h2>Deadlines and failure</h2>
 * Every wait ends at its absolute deadline ({@link System#nanoTime()} based) with a
 * {@code CollectiveException} naming rank, peer, phase and the timeout; it ends at once when the
 * peer {@link #abort aborted}, its process exited, or this memory was closed. {@link
 * #beginCall} publishes the call descriptor beside the flag, and a wait that sees a peer in the
 * same call with a different descriptor throws {@code CallMismatchException}.
 */
public interface LocalPeerMemory extends AutoCloseable {
  /** The collective this rank is entering; published for the peers' descriptor check. */
  void beginCall(long sequence, CallDescriptor call);

  /** Publish {@code value} in this rank's flag (release). Values only grow. */
  void signal(long value);

  /** Block until local {@code peer}'s flag is at least {@code value} (acquire), or fail. */
  void await(int peer, long value, long deadline, String phase);

  /**
   * Signal {@code value}, then wait for it from every other rank of {@code group} (plan ranks,
   * {@code self} among them). A memory whose barrier is one indivisible operation (a GPU barrier
   * kernel) overrides this and reports {@link #barriersOnly()}.
   */
  default void barrier(int[] group, int self, long value, long deadline, String phase) {
    signal(value);
    for (int p : group) {
      if (p != self) {
        await(p, value, deadline, phase);
      }
    }
  }

  /** Whether lone signals and waits are refused (only whole-group {@link #barrier}s run). */
  default boolean barriersOnly() {
    return false;
  }

  /**
   * Tell every local peer that this rank failed or is leaving, so that their waits on it fail at
   * once; this rank's own waits fail from here on too (a collective blocked in one ends).
   */
  void abort(String reason);

  /**
   * Tell the local peers that this rank leaves in order after its last call: a peer that waits
   * on it in a later call fails at once, one that finishes an earlier call does not.
   */
  default void leave(String reason) {
    abort(reason);
  }

  /** Unmaps every peer's memory and releases this rank's; safe after a failure and twice. */
  @Override
  void close();
}
