package io.treeline.core;

/**
 * Two ranks are in different collective calls (another count, type, operation or kind of
 * collective, or another call in the sequence): the message names both ranks and both calls.
 * Every rank of a communicator must make the same sequence of collective calls.
 */
public final class CallMismatchException extends CollectiveException {
  /**
   * @param rank the rank that saw the mismatch
   * @param peer the rank whose call differs
   * @param phase the step or call in progress
   * @param mySeq this rank's call number
   * @param mine this rank's call, described
   * @param peerSeq the peer's call number
   * @param theirs the peer's call, described
   */
  public CallMismatchException(int rank, int peer, String phase, long mySeq, String mine,
      long peerSeq, String theirs) {
    super(rank, peer, phase, "the ranks made different collective calls: rank " + rank
        + " is in call #" + mySeq + " (" + mine + ") but rank " + peer
        + " is in call #" + peerSeq + " (" + theirs + "); every rank must make the "
        + "same sequence of collective calls", null);
  }
}
