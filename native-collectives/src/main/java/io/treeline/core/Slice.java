package io.treeline.core;

/**
 * The elements {@code [lo, hi)} of a message that one rank owns in a reduce-scatter (it ends
 * with them reduced) or contributes to an all-gather. Indices count elements, not bytes, from
 * the start of the message. Slices of the ranks of a communicator are contiguous, in the order of
 * {@link Communicator#topologyRank()}, and cover the message; a slice may be empty when the
 * message is small. {@link Communicator#slice} computes them.
 *
 * @param lo the first element of the slice
 * @param hi one past the last element of the slice
 */
public record Slice(long lo, long hi) {
  /**
   * Checks {@code 0 <= lo <= hi}.
   *
   * @param lo the first element of the slice
   * @param hi one past the last element of the slice
   * @throws IllegalArgumentException when they are not
   */
  public Slice {
    if (lo < 0 || hi < lo) {
      throw new IllegalArgumentException("a slice needs 0 <= lo <= hi, got [" + lo + ", " + hi
          + ")");
    }
  }

  /**
   * The number of elements in the slice.
   *
   * @return {@code hi - lo}
   */
  public long size() {
    return hi - lo;
  }

  /**
   * Whether element {@code i} of the message is in the slice.
   *
   * @param i an element index
   * @return {@code lo <= i < hi}
   */
  public boolean contains(long i) {
    return i >= lo && i < hi;
  }
}
