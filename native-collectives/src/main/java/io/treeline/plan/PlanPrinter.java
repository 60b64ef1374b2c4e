package io.treeline.plan;

import java.util.List;

/**
 * Renders a plan for people ({@link #text}) and for programs ({@link #json}). The text form
 * lists the trees over nodes (parent and children in tree 1 and tree 2, as NCCL's
 * {@code NCCL_DEBUG_SUBSYS=GRAPH} prints its trees), then each rank's steps.
 */
public final class PlanPrinter {
  private PlanPrinter() {
  }

  public static String text(Plan p, int onlyRank) {
    StringBuilder b = new StringBuilder();
    Topology t = p.topology();
    b.append(String.format("plan %s %s: %d nodes, %d ranks (%s), %d x %s = %s, chunk %s, "
            + "%d lane(s), %d steps%n", p.algorithm(), p.collective().name().toLowerCase().replace("_", ""),
        t.nodes(), t.size(), t, p.count(), p.type().name().toLowerCase(), bytes(p.bytes()),
        bytes(p.config().chunkBytes()), p.lanes(), p.totalSteps()));
    if (!p.trees().isEmpty()) {
      b.append("trees over nodes (tree 1: lowest-set-bit rule; tree 2: ")
          .append(t.nodes() % 2 == 0 ? "mirror n-1-r" : "shift r+1 mod n").append(")\n");
      b.append(String.format("  %-6s %-8s %-12s %-8s %-12s%n", "node", "t1.up", "t1.down",
          "t2.up", "t2.down"));
      TreeShape t1 = p.trees().get(0);
      TreeShape t2 = p.trees().get(1);
      for (int v = 0; v < t1.size(); v++) {
        b.append(String.format("  %-6d %-8s %-12s %-8s %-12s%n", v, parent(t1.parent()[v]),
            list(t1.children()[v]), parent(t2.parent()[v]), list(t2.children()[v])));
      }
      b.append(String.format("  roots: tree 1 node %d, tree 2 node %d; depth %d and %d%n",
          t1.root(), t2.root(), t1.depth(), t2.depth()));
    }
    for (int r = 0; r < p.size(); r++) {
      if (onlyRank >= 0 && r != onlyRank) {
        continue;
      }
      List<Step> steps = p.steps(r);
      b.append(String.format("rank %d (node %d, local %d): %d steps%n", r, t.node(r),
          t.localRank(r), steps.size()));
      for (int i = 0; i < steps.size(); i++) {
        b.append(String.format("  %4d  %s%n", i, describe(steps.get(i))));
      }
    }
    return b.toString();
  }

  /** One step as a line: what, with whom, which buffer and elements. */
  public static String describe(Step s) {
    String region = "[" + s.offset() + ", " + (s.offset() + s.count()) + ")";
    if (s instanceof Step.Copy c) {
      return "copy         INPUT -> OUTPUT " + region + fin(c.finish());
    } else if (s instanceof Step.Send x) {
      return String.format("send         to %-5d lane %-2d %s %s", x.peer(), x.lane(), x.src(),
          region);
    } else if (s instanceof Step.RecvReduce x) {
      return String.format("recv-reduce  from %-3d lane %-2d OUTPUT = %s + msg %s%s", x.peer(),
          x.lane(), x.acc(), region, fin(x.finish()));
    } else if (s instanceof Step.RecvCopy x) {
      return String.format("recv-copy    from %-3d lane %-2d OUTPUT = msg %s", x.peer(),
          x.lane(), region);
    } else if (s instanceof Step.Signal x) {
      return "signal       phase " + x.phase();
    } else if (s instanceof Step.Wait x) {
      return "wait         rank " + x.peer() + " phase " + x.phase();
    } else if (s instanceof Step.ReduceFrom x) {
      return "reduce-from  " + list(x.peers()) + " " + x.buf() + " " + region + fin(x.finish());
    } else if (s instanceof Step.CopyFrom x) {
      return "copy-from    rank " + x.peer() + " " + x.buf() + " " + region;
    }
    throw new AssertionError(s);
  }

  public static String json(Plan p) {
    StringBuilder b = new StringBuilder(64 + p.totalSteps() * 64);
    Topology t = p.topology();
    b.append("{\"algorithm\":\"").append(p.algorithm()).append("\",\"collective\":\"")
        .append(p.collective().name().toLowerCase().replace("_", "")).append("\",\"dtype\":\"")
        .append(p.type().name().toLowerCase()).append("\",\"count\":").append(p.count())
        .append(",\"bytes\":").append(p.bytes()).append(",\"chunkBytes\":")
        .append(p.config().chunkBytes()).append(",\"nodes\":").append(t.nodes())
        .append(",\"ranks\":").append(t.size()).append(",\"lanes\":").append(p.lanes())
        .append(",\"ranksPerNode\":[");
    for (int n = 0; n < t.nodes(); n++) {
      b.append(n == 0 ? "" : ",").append(t.localSize(n));
    }
    b.append("]");
    if (p.root() >= 0) {
      b.append(",\"root\":").append(p.root());
    }
    if (!p.trees().isEmpty()) {
      b.append(",\"trees\":[");
      for (int k = 0; k < p.trees().size(); k++) {
        TreeShape tr = p.trees().get(k);
        b.append(k == 0 ? "[" : ",[");
        for (int v = 0; v < tr.size(); v++) {
          b.append(v == 0 ? "" : ",").append("{\"node\":").append(v).append(",\"parent\":")
              .append(tr.parent()[v]).append(",\"children\":").append(list(tr.children()[v]))
              .append("}");
        }
        b.append("]");
      }
      b.append("]");
    }
    b.append(",\"schedules\":[");
    for (int r = 0; r < p.size(); r++) {
      b.append(r == 0 ? "" : ",").append("{\"rank\":").append(r).append(",\"node\":")
          .append(t.node(r)).append(",\"local\":").append(t.localRank(r)).append(",\"steps\":[");
      List<Step> steps = p.steps(r);
      for (int i = 0; i < steps.size(); i++) {
        b.append(i == 0 ? "" : ",");
        stepJson(b, steps.get(i));
      }
      b.append("]}");
    }
    return b.append("]}").toString();
  }

  private static void stepJson(StringBuilder b, Step s) {
    if (s instanceof Step.Copy c) {
      b.append("{\"op\":\"copy\"");
      region(b, s).append(",\"finish\":").append(c.finish());
    } else if (s instanceof Step.Send x) {
      b.append("{\"op\":\"send\",\"peer\":").append(x.peer()).append(",\"lane\":")
          .append(x.lane()).append(",\"buf\":\"").append(x.src().name().toLowerCase())
          .append('"');
      region(b, s);
    } else if (s instanceof Step.RecvReduce x) {
      b.append("{\"op\":\"recv-reduce\",\"peer\":").append(x.peer()).append(",\"lane\":")
          .append(x.lane()).append(",\"acc\":\"").append(x.acc().name().toLowerCase())
          .append('"');
      region(b, s).append(",\"finish\":").append(x.finish());
    } else if (s instanceof Step.RecvCopy x) {
      b.append("{\"op\":\"recv-copy\",\"peer\":").append(x.peer()).append(",\"lane\":")
          .append(x.lane());
      region(b, s);
    } else if (s instanceof Step.Signal x) {
      b.append("{\"op\":\"signal\",\"phase\":").append(x.phase());
    } else if (s instanceof Step.Wait x) {
      b.append("{\"op\":\"wait\",\"peer\":").append(x.peer()).append(",\"phase\":")
          .append(x.phase());
    } else if (s instanceof Step.ReduceFrom x) {
      b.append("{\"op\":\"reduce-from\",\"peers\":").append(list(x.peers()))
          .append(",\"buf\":\"").append(x.buf().name().toLowerCase()).append('"');
      region(b, s).append(",\"finish\":").append(x.finish());
    } else if (s instanceof Step.CopyFrom x) {
      b.append("{\"op\":\"copy-from\",\"peer\":").append(x.peer()).append(",\"buf\":\"")
          .append(x.buf().name().toLowerCase()).append('"');
      region(b, s);
    }
    b.append('}');
  }

  private static StringBuilder region(StringBuilder b, Step s) {
    return b.append(",\"offset\":").append(s.offset()).append(",\"count\":").append(s.count());
  }

  private static String fin(boolean finish) {
    return finish ? "  (final)" : "";
  }

  private static String parent(int p) {
    return p < 0 ? "-" : Integer.toString(p);
  }

  private static String list(int[] xs) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < xs.length; i++) {
      b.append(i == 0 ? "" : ",").append(xs[i]);
    }
    return b.append(']').toString();
  }

  /** 1536 -> "1.5 KiB"; exact powers print without decimals. */
  public static String bytes(long n) {
    String[] u = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    double v = n;
    while (v >= 1024 && i < u.length - 1) {
      v /= 1024;
      i++;
    }
    return v == Math.rint(v) ? String.format("%d %s", (long) v, u[i])
        : String.format("%.2f %s", v, u[i]);
  }
}
