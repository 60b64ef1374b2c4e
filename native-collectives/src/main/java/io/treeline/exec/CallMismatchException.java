package io.treeline.exec;


/** Two ranks are in different collective calls: the message names both ranks and both calls. */
public final class CallMismatchException extends CollectiveException {
  public CallMismatchException(int rank, int peer, String phase, long mySeq, CallDescriptor mine,
      long peerSeq, CallDescriptor theirs) {
    super(rank, peer, phase, "the ranks made different collective calls: rank " + rank
        + " is in call #" + mySeq + " (" + mine.describe() + ") but rank " + peer
        + " is in call #" + peerSeq + " (" + theirs.describe() + "); every rank must make the "
        + "same sequence of collective calls", null);
  }
}
