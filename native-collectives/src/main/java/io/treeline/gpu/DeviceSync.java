package io.treeline.gpu;

/**
 * How the ranks of a node order their kernels around a plan's Signal/Wait steps ({@link
 * DeviceOptions.Sync}). Values only grow ({@code sequence * PHASES + phase}); {@code parity} is
 * the sequence's lowest bit, which double-buffers whatever a value is attached to, so that a peer
 * one call ahead can never overwrite what a late rank is about to wait for.
 */
interface DeviceSync {
  /** Publish that this rank's stream has reached {@code phase}. */
  void signal(int phase, long value, int parity);

  /** Make this rank's stream wait until local {@code peer}'s stream has reached the phase. */
  void await(int peer, int phase, long value, int parity, long deadline, String what);

  /**
   * Both at once, over {@code group} (plan ranks, this rank among them); the default is the
   * signal and then a wait per peer.
   */
  default void barrier(int[] group, int self, int phase, long value, int parity, long deadline,
      String what) {
    signal(phase, value, parity);
    for (int p : group) {
      if (p != self) {
        await(p, phase, value, parity, deadline, what);
      }
    }
  }

  /** Whether only whole-group barriers are supported (a barrier kernel has no half-steps). */
  default boolean barriersOnly() {
    return false;
  }
}
