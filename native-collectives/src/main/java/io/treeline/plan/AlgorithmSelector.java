package io.treeline.plan;

/**
 * Picks the allreduce algorithm with the lowest modelled time, in the alpha-beta model that
 * NCCL's tuner also uses: a step costs a latency alpha, a byte costs 1/beta on the busiest
 * link it crosses. Link classes: {@code intra} (peer memory inside a node: a signal/wait round
 * and a read of peers' buffers) for local ranks that each have a core, {@code intraShared} for
 * local ranks that outnumber the machine's {@code cores} (a wait then lasts until the peer is
 * scheduled), and {@code inter} (a message step, and the node's TCP throughput, which all of a
 * node's ranks share). With S bytes, L ranks on the largest node, N nodes, R = all ranks, d =
 * the trees' depth over N nodes, and a synchronisation round costing y = (L - 1) intra.alpha
 * (it waits for each of the L - 1 peers) or intraShared.alpha:
 *
 * <pre>
 * oneshot       (N = 1)  2 y + L S / b_intra                every rank reads every buffer
 * twoshot       (N = 1)  3 y + (2 - 1/L) S / b_intra        reduce-scatter, then all-gather
 * hierarchical           twoshot's cost (if L > 1) + 2 d a_inter + 2 S / b_inter
 * dbt                    2 (d + L - 1) a_inter + L 2 S / b_inter
 * ring                   2 (R - 1) a_inter + L 2 (R - 1) / R S / b_inter
 * </pre>
 *
 * <p>Inside a node the defaults are fitted to measurement (docs/BENCHMARKS.md, 2026-12-04):
 * on 16 free cores two-shot beat one-shot from 8 KiB at 2, 4 and 8 ranks (by 1.1-2.3x; level at
 * 4 KiB; one-shot reads L times the message, two-shot about twice), which {@code intra} = 1 us per
 * peer and 5 GB/s reproduce (crossovers 10 KB at 2 ranks, 6.7 KB at 4, 5.7 KB at 8); the old
 * single constants (20 us, 10 GB/s: crossovers near 90 KB and 33 KB) put 32 KiB on one-shot,
 * 1.6-2.6x slower there. When ranks outnumber the cores (4 ranks on 2) every round waits for a
 * scheduler slice, so one-shot's fewer rounds pay up to larger messages: those keep 20 us.
 *
 * <p>Message steps cost {@code inter} even between ranks of one node, because the host
 * transport carries every message over TCP (loopback inside a node): a node pushes the TCP
 * bytes of all its L ranks through one network stack, which is why ring and chain pay L times
 * what the hierarchical plan pays (it crosses TCP with 2S per node in all).
 *
 * <p>With one rank per node the ring moves 2(R-1)/R S per node against the trees' 2S, so rings
 * win for very large messages on few nodes and trees win wherever latency matters, as in NCCL.
 * The inter-node defaults are for commodity Ethernet; calibration from measurements can
 * replace them.
 */
public record AlgorithmSelector(LinkCost intra, LinkCost intraShared, LinkCost inter,
    int cores) {
  /** Latency per step in microseconds and bandwidth in GB/s (10^9 bytes per second). */
  public record LinkCost(double alphaMicros, double gbps) {
    double micros(double bytes) {
      return bytes / (gbps * 1e3);
    }
  }

  /**
   * Host defaults for this machine's cores: a shared-memory round 1 us per local peer and peer
   * reads at 5 GB/s when the ranks have their cores, 20 us and 10 GB/s when they share them; a
   * TCP step 40 us and 1.25 GB/s per node (10 GbE).
   */
  public static final AlgorithmSelector DEFAULT = new AlgorithmSelector(
      new LinkCost(1, 5), new LinkCost(20, 10), new LinkCost(40, 1.25),
      Runtime.getRuntime().availableProcessors());

  /** The same costs for a machine of {@code cores} cores. */
  public AlgorithmSelector withCores(int cores) {
    return new AlgorithmSelector(intra, intraShared, inter, cores);
  }

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
      case ONESHOT -> 2 * sync(local) + peers(local).micros(local * s);
      case TWOSHOT -> twoShot(local, s);
      case HIERARCHICAL -> nodes == 1 ? twoShot(local, s)
          : (local > 1 ? twoShot(local, s) : 0) + 2 * depth * inter.alphaMicros
              + inter.micros(2 * s);
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

  private double twoShot(int local, double s) {
    return 3 * sync(local) + peers(local).micros((2.0 - 1.0 / local) * s);
  }

  /** One synchronisation round of {@code local} ranks: each waits for its local - 1 peers. */
  private double sync(int local) {
    return local <= cores ? (local - 1) * intra.alphaMicros : intraShared.alphaMicros;
  }

  private LinkCost peers(int local) {
    return local <= cores ? intra : intraShared;
  }
}
