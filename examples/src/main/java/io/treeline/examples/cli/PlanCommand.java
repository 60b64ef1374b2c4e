package io.treeline.examples.cli;

import io.treeline.core.DataType;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.PlanPrinter;
import io.treeline.plan.Ring;
import io.treeline.plan.Topology;
import io.treeline.plan.TreeBroadcast;
import io.treeline.plan.TwoShot;
import io.treeline.plan.verify.SymbolicExecutor;
import io.treeline.plan.verify.Verification;
import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;

/** {@code ./treeline plan}: print a plan, as text or JSON, and optionally prove it. */
final class PlanCommand {
  private PlanCommand() {
  }

  static int run(String[] argv, PrintStream out) {
    Args a = new Args("plan", "Print the schedule Treeline would run: the trees over nodes "
        + "(parent and children in tree 1 and tree 2)\nand every rank's steps. --verify runs "
        + "the symbolic executor on it and prints what it proved.")
        .option("nodes", "N", "2", "number of nodes")
        .option("gpus", "G", "4", "ranks (GPUs) per node")
        .option("ranks-per-node", "LIST", null, "uneven nodes, e.g. 4,1,3 (overrides --nodes/--gpus)")
        .option("algo", "NAME", "hierarchical", "ring, dbt, oneshot, twoshot, hierarchical")
        .option("collective", "NAME", "allreduce", "allreduce, reducescatter, allgather, broadcast")
        .option("root", "RANK", "0", "root rank of a broadcast")
        .option("bytes", "SIZE", "1M", "message size (8, 64K, 1M, 4G)")
        .option("dtype", "TYPE", "f32", "f32, f64, f16, bf16, i32, i64, u8")
        .option("chunk", "SIZE", "512K", "pipelining chunk of tree and ring plans")
        .option("rank", "R", null, "list only this rank's steps")
        .flag("json", "print JSON for programs instead of text")
        .flag("verify", "prove the plan with the symbolic executor and print what it proved")
        .flag("no-steps", "leave out the per-rank step listing");
    if (!a.parse(argv)) {
      return 0;
    }
    Topology topo = a.get("ranks-per-node") != null
        ? Topology.of(Arrays.stream(a.get("ranks-per-node").split(","))
            .mapToInt(s -> Integer.parseInt(s.trim())).toArray())
        : Topology.uniform(a.getInt("nodes"), a.getInt("gpus"));
    DataType type = DataType.parse(a.get("dtype"));
    long bytes = a.getBytes("bytes");
    if (bytes % type.size() != 0) {
      throw new Args.UsageException("--bytes " + bytes + " is not a whole number of "
          + type.longName() + " elements (" + type.size() + " bytes each)");
    }
    long count = bytes / type.size();
    PlanConfig cfg = PlanConfig.DEFAULT.withChunkBytes(a.getBytes("chunk"));
    Plan plan = build(a.get("collective"), Algorithm.parse(a.get("algo")), topo, type, count,
        a.getInt("root"), cfg);
    if (a.has("json")) {
      out.println(PlanPrinter.json(plan));
    } else {
      String text = PlanPrinter.text(plan, a.get("rank") != null ? a.getInt("rank") : -1);
      if (a.has("no-steps")) {
        text = text.substring(0, text.indexOf("\nrank ") + 1);
      }
      out.print(text);
    }
    if (a.has("verify")) {
      long t0 = System.nanoTime();
      Verification v = SymbolicExecutor.verify(plan);
      double ms = (System.nanoTime() - t0) / 1e6;
      (a.has("json") ? System.err : out).print(v.describe(plan.bytes())
          + String.format("  symbolic execution took %.1f ms%n", ms));
    }
    return 0;
  }

  static Plan build(String collective, Algorithm algo, Topology topo, DataType type,
      long count, int root, PlanConfig cfg) {
    switch (collective.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "")) {
      case "allreduce":
        if (!algo.supports(topo)) {
          throw new Args.UsageException(algo.id() + " runs inside one node; this topology has "
              + topo.nodes() + " nodes (try --algo hierarchical)");
        }
        return algo.allReduce(topo, type, count, cfg);
      case "reducescatter":
        return topo.nodes() == 1 && algo == Algorithm.TWOSHOT
            ? TwoShot.reduceScatter(topo, type, count, cfg)
            : Ring.reduceScatter(topo, type, count, cfg);
      case "allgather":
        return Ring.allGather(topo, type, count, cfg);
      case "broadcast":
        return TreeBroadcast.broadcast(topo, type, count, root, cfg);
      default:
        throw new Args.UsageException("unknown collective '" + collective
            + "'; expected allreduce, reducescatter, allgather or broadcast");
    }
  }
}
