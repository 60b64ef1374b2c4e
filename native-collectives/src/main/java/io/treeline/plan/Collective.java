package io.treeline.plan;

/** What a plan computes; the symbolic executor checks each against its definition. */
public enum Collective {
  /** Every rank ends with the reduction of every rank's INPUT. */
  ALL_REDUCE,
  /** Rank r ends with the reduction of slice r ({@link Slices}) in its OUTPUT. */
  REDUCE_SCATTER,
  /** Rank r contributes slice r of its INPUT; every rank ends with all slices. */
  ALL_GATHER,
  /** Every rank ends with the root's INPUT. */
  BROADCAST
}
