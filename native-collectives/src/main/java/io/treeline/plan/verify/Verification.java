package io.treeline.plan.verify;

/**
 * What the symbolic executor proved about a plan, and the traffic it counted. Bytes "across
 * nodes" are message bytes whose endpoints are on different nodes; peer-memory reads count as
 * intra-node traffic from the owner to the reader.
 *
 * @param steps steps executed, all ranks together
 * @param messages messages sent (each matched by exactly one receive)
 * @param links ordered rank pairs that carried any bytes
 * @param maxLinkBytes the most bytes any one ordered rank pair carried
 * @param minLinkBytes the fewest bytes a used ordered rank pair carried
 * @param maxRankInterSent the most bytes any rank sent across nodes
 * @param maxRankInterRecv the most bytes any rank received across nodes
 * @param maxNodeInterSent the most bytes any node sent across nodes (all its ranks)
 * @param minNodeInterSent the fewest bytes any node sent across nodes
 * @param maxNodeInterRecv the most bytes any node received across nodes
 * @param minNodeInterRecv the fewest bytes any node received across nodes
 * @param maxRankIntraBytes the most bytes any rank sent or had read by peers inside its node
 */
public record Verification(int ranks, int nodes, long steps, long messages, int links,
    long maxLinkBytes, long minLinkBytes, long maxRankInterSent, long maxRankInterRecv,
    long maxNodeInterSent, long minNodeInterSent, long maxNodeInterRecv, long minNodeInterRecv,
    long maxRankIntraBytes, long[] rankInterSent, long[] rankInterRecv) {

  /** A human-readable summary, as {@code ./treeline plan --verify} prints it. */
  public String describe(long messageBytes) {
    StringBuilder b = new StringBuilder();
    b.append(String.format("verified: %d ranks on %d nodes, %d steps, %d messages%n",
        ranks, nodes, steps, messages));
    b.append("  every rank ends with every contribution to every element exactly once\n");
    b.append("  no read of a region before it was written or before its owner signalled it\n");
    b.append("  no deadlock with one-message channels; every receive matched a send\n");
    b.append(String.format("  links used: %d, bytes per link max %s min %s%n", links,
        human(maxLinkBytes), human(minLinkBytes)));
    if (nodes > 1) {
      b.append(String.format("  across nodes per rank: sent max %s (%.2fx message), "
          + "received max %s (%.2fx)%n", human(maxRankInterSent), ratio(maxRankInterSent,
          messageBytes), human(maxRankInterRecv), ratio(maxRankInterRecv, messageBytes)));
      b.append(String.format("  across nodes per node: sent %s..%s (%.2fx..%.2fx message), "
          + "received %s..%s%n", human(minNodeInterSent), human(maxNodeInterSent),
          ratio(minNodeInterSent, messageBytes), ratio(maxNodeInterSent, messageBytes),
          human(minNodeInterRecv), human(maxNodeInterRecv)));
    }
    b.append(String.format("  inside nodes per rank: max %s%n", human(maxRankIntraBytes)));
    return b.toString();
  }

  private static double ratio(long a, long b) {
    return b == 0 ? 0 : (double) a / b;
  }

  static String human(long bytes) {
    if (bytes < 1024) {
      return bytes + " B";
    }
    String[] u = {"KiB", "MiB", "GiB", "TiB"};
    double v = bytes;
    int i = -1;
    while (v >= 1024 && i < u.length - 1) {
      v /= 1024;
      i++;
    }
    return String.format("%.2f %s", v, u[i]);
  }
}
