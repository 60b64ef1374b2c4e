package io.treeline.plan;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
    staging(b, p);
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

  /** For staged plans: how many chunks each rank copies to host memory and back, how large. */
  private static void staging(StringBuilder b, Plan p) {
    long chunks = 0;
    long most = 0;
    long largest = 0;
    for (int r = 0; r < p.size(); r++) {
      long mine = 0;
      for (Step s : p.steps(r)) {
        if (s instanceof Step.StageOut o) {
          mine++;
          largest = Math.max(largest, o.count());
        }
      }
      chunks += mine;
      most = Math.max(most, mine);
    }
    if (chunks > 0) {
      b.append(String.format("staged through host memory: %d stage chunks in all, at most %d "
          + "per rank, each at most %s, every one copied out (stage-out), across the nodes' "
          + "trees, and back (stage-in)%n", chunks, most, bytes(largest * p.type().size())));
    }
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
      return String.format("recv-reduce  from %-3d lane %-2d %s = %s + msg %s%s", x.peer(),
          x.lane(), x.acc() == Buf.STAGE ? Buf.STAGE : Buf.OUTPUT, x.acc(), region,
          fin(x.finish()));
    } else if (s instanceof Step.RecvCopy x) {
      return String.format("recv-copy    from %-3d lane %-2d %s = msg %s", x.peer(),
          x.lane(), x.dst(), region);
    } else if (s instanceof Step.StageOut x) {
      return "stage-out    OUTPUT -> STAGE " + region;
    } else if (s instanceof Step.StageIn x) {
      return "stage-in     STAGE -> OUTPUT " + region + fin(x.finish());
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

  private static final ObjectMapper JSON = new ObjectMapper();

  /** One line of JSON (Jackson): the plan's figures, its trees and every rank's steps. */
  public static String json(Plan p) {
    Topology t = p.topology();
    ObjectNode o = JSON.createObjectNode();
    o.put("algorithm", p.algorithm().toString())
        .put("collective", p.collective().name().toLowerCase().replace("_", ""))
        .put("dtype", p.type().name().toLowerCase()).put("count", p.count())
        .put("bytes", p.bytes()).put("chunkBytes", p.config().chunkBytes())
        .put("nodes", t.nodes()).put("ranks", t.size()).put("lanes", p.lanes());
    ArrayNode perNode = o.putArray("ranksPerNode");
    for (int n = 0; n < t.nodes(); n++) {
      perNode.add(t.localSize(n));
    }
    if (p.root() >= 0) {
      o.put("root", p.root());
    }
    if (!p.trees().isEmpty()) {
      ArrayNode trees = o.putArray("trees");
      for (TreeShape tr : p.trees()) {
        ArrayNode tree = trees.addArray();
        for (int v = 0; v < tr.size(); v++) {
          ObjectNode node = tree.addObject().put("node", v).put("parent", tr.parent()[v]);
          ints(node.putArray("children"), tr.children()[v]);
        }
      }
    }
    ArrayNode schedules = o.putArray("schedules");
    for (int r = 0; r < p.size(); r++) {
      ObjectNode rank = schedules.addObject().put("rank", r).put("node", t.node(r))
          .put("local", t.localRank(r));
      ArrayNode steps = rank.putArray("steps");
      for (Step s : p.steps(r)) {
        step(steps.addObject(), s);
      }
    }
    try {
      return JSON.writeValueAsString(o);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("a plan's JSON tree did not serialise", e);
    }
  }

  private static void step(ObjectNode o, Step s) {
    if (s instanceof Step.Copy c) {
      region(o.put("op", "copy"), s).put("finish", c.finish());
    } else if (s instanceof Step.Send x) {
      region(o.put("op", "send").put("peer", x.peer()).put("lane", x.lane())
          .put("buf", x.src().name().toLowerCase()), s);
    } else if (s instanceof Step.RecvReduce x) {
      region(o.put("op", "recv-reduce").put("peer", x.peer()).put("lane", x.lane())
          .put("acc", x.acc().name().toLowerCase()), s).put("finish", x.finish());
    } else if (s instanceof Step.RecvCopy x) {
      region(o.put("op", "recv-copy").put("peer", x.peer()).put("lane", x.lane())
          .put("dst", x.dst().name().toLowerCase()), s);
    } else if (s instanceof Step.StageOut x) {
      region(o.put("op", "stage-out"), s);
    } else if (s instanceof Step.StageIn x) {
      region(o.put("op", "stage-in"), s).put("finish", x.finish());
    } else if (s instanceof Step.Signal x) {
      o.put("op", "signal").put("phase", x.phase());
    } else if (s instanceof Step.Wait x) {
      o.put("op", "wait").put("peer", x.peer()).put("phase", x.phase());
    } else if (s instanceof Step.ReduceFrom x) {
      o.put("op", "reduce-from");
      ints(o.putArray("peers"), x.peers());
      region(o.put("buf", x.buf().name().toLowerCase()), s).put("finish", x.finish());
    } else if (s instanceof Step.CopyFrom x) {
      region(o.put("op", "copy-from").put("peer", x.peer())
          .put("buf", x.buf().name().toLowerCase()), s);
    } else {
      throw new AssertionError(s);
    }
  }

  private static ObjectNode region(ObjectNode o, Step s) {
    return o.put("offset", s.offset()).put("count", s.count());
  }

  private static void ints(ArrayNode a, int[] xs) {
    for (int x : xs) {
      a.add(x);
    }
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
