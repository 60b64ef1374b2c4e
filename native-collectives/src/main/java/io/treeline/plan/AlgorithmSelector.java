package io.treeline.plan;

/**
 * Picks the allreduce algorithm for a topology and message size. Inside one node, one-shot
 * while its n-fold reads cost less than two-shot's extra synchronisation (below
 * {@code oneShotMaxBytes}), two-shot above; across nodes the hierarchical plan, which runs
 * both inside each node and double binary trees across nodes.
 */
public record AlgorithmSelector(long oneShotMaxBytes) {
  /** 256 KiB: vLLM's custom allreduce switches from one-shot to two-shot in that range. */
  public static final AlgorithmSelector DEFAULT = new AlgorithmSelector(256 * 1024);

  public Algorithm select(Topology topo, long bytes) {
    if (topo.nodes() > 1) {
      return Algorithm.HIERARCHICAL;
    }
    return bytes <= oneShotMaxBytes ? Algorithm.ONESHOT : Algorithm.TWOSHOT;
  }
}
