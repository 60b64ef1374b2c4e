package io.treeline.examples.cli;

import io.treeline.core.DataType;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.PlanPrinter;
import io.treeline.plan.Ring;
import io.treeline.plan.StagedHierarchical;
import io.treeline.plan.Topology;
import io.treeline.plan.TreeBroadcast;
import io.treeline.plan.TwoShot;
import io.treeline.plan.verify.SymbolicExecutor;
import io.treeline.plan.verify.Verification;
import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code ./treeline plan}: print a plan, as text or JSON, and optionally prove it. */
@Command(name = "plan",
    header = "Print a collective's plan (trees, per-rank steps), --json, --verify", mixinStandardHelpOptions = true,
    versionProvider = Treeline.Version.class, sortOptions = false,
    description = {"Print the schedule Treeline would run: the trees over nodes (parent and "
        + "children in tree 1 and tree 2) and every rank's steps. --verify runs the symbolic "
        + "executor on it and prints what it proved."},
    footer = {"", "Examples:", "  ./treeline plan --nodes 4 --gpus 8 --algo dbt --bytes 1M",
        "  ./treeline plan --nodes 5 --gpus 1 --algo dbt --bytes 1M --json",
        "  ./treeline plan --nodes 16 --gpus 8 --algo hierarchical --bytes 256M --verify "
            + "--no-steps",
        "  ./treeline plan --gpu --nodes 4 --gpus 8 --bytes 64M --verify --no-steps"})
final class PlanCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  private final PrintStream out;

  @Option(names = "--nodes", paramLabel = "N", defaultValue = "2",
      description = "number of nodes, 1..4096 (default: ${DEFAULT-VALUE})")
  int nodes;

  @Option(names = "--gpus", paramLabel = "G", defaultValue = "4",
      description = "ranks (GPUs) per node, 1..1024 (default: ${DEFAULT-VALUE})")
  int gpus;

  @Option(names = "--ranks-per-node", paramLabel = "LIST",
      description = "uneven nodes, e.g. 4,1,3 (overrides --nodes and --gpus)")
  String ranksPerNode;

  @Option(names = "--algo", paramLabel = "NAME", defaultValue = "hierarchical",
      completionCandidates = AlgorithmIds.class,
      description = "${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
  Algorithm algo;

  @Option(names = "--gpu",
      description = "the GPU path's plan: one node runs oneshot or twoshot on device memory "
          + "(hierarchical means twoshot there); several nodes run " + StagedHierarchical.NAME
          + " (reduce-scatter on the GPUs, trees across nodes on host copies, all-gather on "
          + "the GPUs)")
  boolean gpu;

  @Option(names = "--staging-chunk", paramLabel = "SIZE", defaultValue = "4M",
      converter = Units.Size.class,
      description = "with --gpu across nodes: the unit in which a slice is copied to the host, "
          + "crosses and is copied back, 4K..1G (default: ${DEFAULT-VALUE}, as "
          + "spark.treeline.gpu.stagingChunkBytes)")
  long stagingChunk;

  @Option(names = "--collective", paramLabel = "NAME", defaultValue = "allreduce",
      description = "allreduce, reducescatter, allgather, broadcast (default: ${DEFAULT-VALUE})")
  String collective;

  @Option(names = "--root", paramLabel = "RANK", defaultValue = "0",
      description = "root rank of a broadcast (default: ${DEFAULT-VALUE})")
  int root;

  @Option(names = "--bytes", paramLabel = "SIZE", defaultValue = "1M",
      converter = Units.Size.class,
      description = "message size, e.g. 8, 64K, 1M, 4G; at most 1T (default: ${DEFAULT-VALUE})")
  long bytes;

  @Option(names = "--dtype", paramLabel = "TYPE", defaultValue = "f32",
      description = "f32, f64, f16, bf16, i32, i64, u8 (default: ${DEFAULT-VALUE})")
  DataType type;

  @Option(names = "--chunk", paramLabel = "SIZE", defaultValue = "512K",
      converter = Units.Size.class,
      description = "pipelining chunk of tree and ring plans, 64..1G (default: ${DEFAULT-VALUE})")
  long chunk;

  @Option(names = "--rank", paramLabel = "R", description = "list only this rank's steps")
  Integer rank;

  @Option(names = "--json", description = "print JSON for programs instead of text")
  boolean json;

  @Option(names = "--verify",
      description = "prove the plan with the symbolic executor and print what it proved")
  boolean verify;

  @Option(names = "--no-steps", description = "leave out the per-rank step listing")
  boolean noSteps;

  PlanCommand(PrintStream out) {
    this.out = out;
  }

  @Override
  public Integer call() {
    Topology topo;
    if (ranksPerNode != null) {
      topo = Topology.of(Units.intList(spec, "--ranks-per-node", ranksPerNode, 1, 1024));
      Units.range(spec, "--ranks-per-node (nodes)", topo.nodes(), 1, 4096);
    } else {
      Units.range(spec, "--nodes", nodes, 1, 4096);
      Units.range(spec, "--gpus", gpus, 1, 1024);
      topo = Topology.uniform(nodes, gpus);
    }
    Units.range(spec, "ranks in all", topo.size(), 1, 65536);
    Units.sizeRange(spec, "--bytes", bytes, 1, 1L << 40, "a message");
    Units.sizeRange(spec, "--chunk", chunk, 64, 1L << 30, "a pipelining chunk");
    if ((bytes + chunk - 1) / chunk > 65536) {
      throw Units.usage(spec, "--bytes " + Units.bytesText(bytes) + " in --chunk "
          + Units.bytesText(chunk) + " pieces makes more than 65536 chunks; raise --chunk");
    }
    Units.range(spec, "--root", root, 0, topo.size() - 1);
    if (rank != null) {
      Units.range(spec, "--rank", rank, 0, topo.size() - 1);
    }
    if (bytes % type.size() != 0) {
      throw Units.usage(spec, "--bytes " + bytes + " is not a whole number of "
          + type.longName() + " elements (" + type.size() + " bytes each)");
    }
    long count = bytes / type.size();
    PlanConfig cfg = PlanConfig.DEFAULT.withChunkBytes(chunk);
    Plan plan = gpu ? buildGpu(spec, collective, algo, topo, type, count, cfg, stagingChunk)
        : build(spec, collective, algo, topo, type, count, root, cfg);
    if (json) {
      out.println(PlanPrinter.json(plan));
    } else {
      String text = PlanPrinter.text(plan, rank != null ? rank : -1);
      if (noSteps) {
        text = text.substring(0, text.indexOf("\nrank ") + 1);
      }
      out.print(text);
    }
    if (verify) {
      long t0 = System.nanoTime();
      Verification v = SymbolicExecutor.verify(plan);
      double ms = (System.nanoTime() - t0) / 1e6;
      (json ? System.err : out).print(v.describe(plan.bytes())
          + String.format("  symbolic execution took %.1f ms%n", ms));
    }
    return 0;
  }

  /** The plan the GPU path runs ({@code gpu.DeviceCommunicator}): allreduce only. */
  static Plan buildGpu(CommandSpec spec, String collective, Algorithm algo, Topology topo,
      DataType type, long count, PlanConfig cfg, long stagingChunk) {
    if (!collective.toLowerCase(Locale.ROOT).replace("-", "").equals("allreduce")) {
      throw Units.usage(spec, "--gpu plans are allreduces; the GPU path runs no "
          + collective + " (drop --gpu for the host path's)");
    }
    if (topo.nodes() == 1) {
      if (algo != Algorithm.ONESHOT && algo != Algorithm.TWOSHOT
          && algo != Algorithm.HIERARCHICAL) {
        throw Units.usage(spec, "--gpu --algo " + algo.id() + ": inside a node the GPU path "
            + "runs oneshot or twoshot");
      }
      return (algo == Algorithm.ONESHOT ? Algorithm.ONESHOT : Algorithm.TWOSHOT)
          .allReduce(topo, type, count, cfg);
    }
    if (algo != Algorithm.HIERARCHICAL) {
      throw Units.usage(spec, "--gpu --algo " + algo.id() + ": across nodes the GPU path runs "
          + "hierarchical (as " + StagedHierarchical.NAME + ")");
    }
    Units.sizeRange(spec, "--staging-chunk", stagingChunk, 4096, 1L << 30, "a staging chunk");
    return StagedHierarchical.allReduce(topo, type, count, cfg, stagingChunk);
  }

  static Plan build(CommandSpec spec, String collective, Algorithm algo, Topology topo,
      DataType type, long count, int root, PlanConfig cfg) {
    switch (collective.toLowerCase(Locale.ROOT).replace("-", "").replace("_", "")) {
      case "allreduce":
        if (!algo.supports(topo)) {
          throw Units.usage(spec, "--algo " + algo.id() + " runs inside one node; this topology "
              + "has "
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
        throw Units.usage(spec, "--collective: unknown collective '" + collective
            + "'; expected allreduce, reducescatter, allgather or broadcast");
    }
  }
}
