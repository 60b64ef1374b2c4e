package io.treeline.plan;

/**
 * Picks the allreduce algorithm with the lowest modelled time, in the alpha-beta model that
 * NCCL's tuner also uses: a step costs a latency alpha, a byte costs 1/beta on the busiest
 * link it crosses. Two link classes: {@code intra} (peer memory inside a node: a signal/wait
 * round and a read of peers' buffers) and {@code inter} (a message step, and the node's TCP
 * throughput, which all of a node's ranks share). With S bytes, L ranks on the largest node, N
 * nodes, R = all ranks and d = the trees' depth over N nodes:
 *
 * <pre>
 * oneshot       (N = 1)  2 a_intra + L S / b_intra          every rank reads every buffer
 * twoshot       (N = 1)  3 a_intra + 2 S / b_intra          reduce-scatter, then all-gather
 * hierarchical           twoshot's cost (if L > 1) + 2 d a_inter + 2 S / b_inter
 * dbt                    2 (d + L - 1) a_inter + L 2 S / b_inter
 * ring                   2 (R - 1) a_inter + L 2 (R - 1) / R S / b_inter
 * </pre>
 *
 * Message steps cost {@code inter} even between ranks of one node, because the host
 * transport carries every message over TCP (loopback inside a node): a node pushes the TCP
 * bytes of all its L ranks through one network stack, which is why ring and chain pay L times
 * what the hierarchical plan pays (it crosses TCP with 2S per node in all).
 *
 * With one rank per node the ring moves 2(R-1)/R S per node against the trees' 2S, so rings
 * win for very large messages on few nodes and trees win wherever latency matters, as in NCCL.
 * The defaults are for hosts (shared memory and TCP on commodity Ethernet); calibration from
 * measurements can replace them.
 */
public record AlgorithmSelector(LinkCost intra, LinkCost inter) {
  /** Latency per step in microseconds and bandwidth in GB/s (10^9 bytes per second). */
  public record LinkCost(double alphaMicros, double gbps) {
    double micros(double bytes) {
      return bytes / (gbps * 1e3);
    }
  }

  /**
   * Host defaults: a shared-memory synchronisation round 20 us and peer reads at 10 GB/s; a TCP
   * step 40 us and 1.25 GB/s per node (10 GbE).
   */
  public static final AlgorithmSelector DEFAULT = new AlgorithmSelector(
      new LinkCost(20, 10), new LinkCost(40, 1.25));

  private static final Algorithm[] CANDIDATES = {Algorithm.ONESHOT, Algorithm.TWOSHOT,
      Algorithm.HIERARCHICAL, Algorithm.DBT, Algorithm.RING};

  public Algorithm select(Topology topo, long bytes) {
    Algorithm best = null;
    double bestTime = Double.MAX_VALUE;
    for (Algorithm a : CANDIDATES) {
      if (!a.supports(topo)) {
        continue;
      }
      double t = estimateMicros(a, topo, bytes);
      if (t < bestTime) {
        best = a;
        bestTime = t;
      }
    }
    return best;
  }

  /** The model's time for one allreduce of {@code bytes} with {@code a} on {@code topo}. */
  public double estimateMicros(Algorithm a, Topology topo, long bytes) {
    int nodes = topo.nodes();
    int local = topo.maxLocalSize();
    int ranks = topo.size();
    double s = bytes;
    int depth = nodes == 1 ? ONE_NODE_DEPTH : depth(nodes);
    return switch (a) {
      case ONESHOT -> 2 * intra.alphaMicros + intra.micros(local * s);
      case TWOSHOT -> twoShot(s);
      case HIERARCHICAL -> nodes == 1 ? twoShot(s)
          : (local > 1 ? twoShot(s) : 0) + 2 * depth * inter.alphaMicros + inter.micros(2 * s);
      case DBT -> 2.0 * (depth + local - 1) * inter.alphaMicros + inter.micros(local * 2 * s);
      case RING -> 2.0 * (ranks - 1) * inter.alphaMicros
          + inter.micros(local * 2.0 * (ranks - 1) / ranks * s);
    };
  }

  /** The trees' depth over one node, made once: a small call's selection allocates nothing. */
  private static final int ONE_NODE_DEPTH = depth(1);

  private static int depth(int nodes) {
    return Math.max(BinaryTrees.dtree(nodes, 0).depth(), BinaryTrees.dtree(nodes, 1).depth());
  }

  private double twoShot(double s) {
    return 3 * intra.alphaMicros + intra.micros(2 * s);
  }
}
