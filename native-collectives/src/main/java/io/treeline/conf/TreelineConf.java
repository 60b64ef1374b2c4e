package io.treeline.conf;

import io.treeline.plan.Algorithm;
import io.treeline.plan.PlanConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Every {@code spark.treeline.*} key, declared once with its type, default, validation and
 * documentation, in the manner of spark-rapids' {@code RapidsConf}. {@code docs/configuration.md}
 * is generated from these declarations ({@code ./mvnw -Pdocs -pl native-collectives
 * process-classes}, or {@link #main}), and a test fails when the committed file differs.
 *
 * <p>Lives in the engine module (no Spark types: it reads a plain map) so that the plugin, the
 * barrier bridge and plain processes share one declaration. Unknown {@code spark.treeline.*}
 * keys are an error, so that a typo does not silently fall back to a default.
 */
public final class TreelineConf {
  private static final List<ConfEntry<?>> ENTRIES = new ArrayList<>();
  public static final String PREFIX = "spark.treeline.";

  public static final ConfEntry<Duration> TIMEOUT = conf("spark.treeline.timeout")
      .doc("How long one collective, or the communicator's setup, may take. Past it every rank "
          + "fails with an error naming the rank, the peer and the phase it waited in.")
      .durationConf().check(d -> !d.isNegative() && !d.isZero(), "must be positive")
      .createWithDefault(Duration.ofSeconds(60));

  public static final ConfEntry<String> ALGORITHM = conf("spark.treeline.algorithm")
      .doc("The allreduce algorithm: auto (a cost model picks by size and topology), ring, dbt "
          + "(NCCL's double binary tree), oneshot, twoshot (inside one node only) or "
          + "hierarchical (intra-node reduce-scatter, trees across nodes, intra-node "
          + "all-gather).")
      .stringConf().check(s -> s.equals("auto") || parses(s), "must be auto or one of "
          + Algorithm.ids())
      .createWithDefault("auto");

  public static final ConfEntry<Long> BUCKET_BYTES = conf("spark.treeline.bucketBytes")
      .doc("Gradient bucket size of GradientAggregator: gradients are packed into buckets of "
          + "about this many bytes, and each bucket's allreduce starts as soon as its gradients "
          + "are ready (PyTorch DDP's bucket_cap_mb).")
      .bytesConf().check(b -> b >= 1024, "must be at least 1 KiB")
      .createWithDefault(25L << 20);

  public static final ConfEntry<Long> SEGMENT_BYTES = conf("spark.treeline.segmentBytes")
      .doc("Bytes of each of a rank's two shared-memory buffers. Collectives larger than this "
          + "run in windows: allreduces and broadcasts in pieces of this size, reduce-scatters "
          + "and all-gathers in a piece of every rank's slice at a time.")
      .bytesConf().check(b -> b >= 4096 && b % 64 == 0, "must be a multiple of 64, at least "
          + "4 KiB")
      .createWithDefault(32L << 20);

  public static final ConfEntry<Long> CHUNK_BYTES = conf("spark.treeline.chunkBytes")
      .doc("Pipelining chunk of the tree and ring plans: larger chunks cost fewer steps, "
          + "smaller ones fill the pipeline sooner. Also the size of a network receive slot.")
      .bytesConf().check(b -> b >= 4096 && b <= (64L << 20), "must be 4 KiB .. 64 MiB")
      .createWithDefault(512L << 10);

  public static final ConfEntry<Long> NET_GRAIN_BYTES = conf("spark.treeline.netGrainBytes")
      .doc("Across nodes, the smallest piece of a message that one rank's slice or one of the "
          + "two trees carries: an allreduce with less than this per rank of a node crosses on "
          + "fewer ranks and on one tree, one network message a hop instead of one per rank and "
          + "tree. 0 (the default) divides 32 KiB among the ranks of a node (16 KiB at 2 ranks, "
          + "4 KiB at 8), so that every rank and both trees carry a message from 64 KiB up. "
          + "Otherwise a power of two; a grain above the chunk acts as the chunk.")
      .bytesConf().check(b -> b == 0 || b >= 64 && b <= (64L << 20) && Long.bitCount(b) == 1,
          "must be 0 (by ranks per node) or a power of two, 64 B .. 64 MiB")
      .createWithDefault((long) PlanConfig.DEFAULT.netGrainBytes());

  public static final ConfEntry<Integer> SLOTS_PER_LANE = conf("spark.treeline.slotsPerLane")
      .doc("Receive slots per network lane: how many chunks a sender may have in flight on one "
          + "lane before the receiver frees one.")
      .intConf().check(n -> n >= 1 && n <= 64, "must be 1..64")
      .createWithDefault(2);

  public static final ConfEntry<Long> GPU_BUFFER_BYTES = conf("spark.treeline.gpu.bufferBytes")
      .doc("GPU path: bytes of each of a rank's two registered device buffers (INPUT and "
          + "OUTPUT), which the other ranks of its node map through CUDA IPC. Larger allreduces "
          + "run in windows of this size.")
      .bytesConf().check(b -> b >= 4096 && b % 256 == 0, "must be a multiple of 256, at least "
          + "4 KiB")
      .createWithDefault(256L << 20);

  public static final ConfEntry<String> GPU_SYNC = conf("spark.treeline.gpu.sync")
      .doc("GPU path: how the ranks of a node order their kernels. flags: a barrier kernel on "
          + "flags in peer memory (release/acquire), for one GPU per rank; events: CUDA IPC "
          + "events behind a shared-memory handshake, for ranks that share a GPU; auto: flags "
          + "when every rank of the node has a GPU of its own.")
      .stringConf().check(s -> s.equals("auto") || s.equals("flags") || s.equals("events"),
          "must be auto, flags or events")
      .createWithDefault("auto");

  public static final ConfEntry<Long> GPU_STAGING_CHUNK_BYTES =
      conf("spark.treeline.gpu.stagingChunkBytes")
      .doc("GPU path across nodes: the unit in which a rank's slice crosses through pinned host "
          + "memory; the device-to-host copy of one chunk overlaps the network transfer of the "
          + "one before and the host-to-device copy of the one before that.")
      .bytesConf().check(b -> b >= 4096, "must be at least 4 KiB")
      .createWithDefault(io.treeline.plan.StagedHierarchical.DEFAULT_STAGE_CHUNK_BYTES);

  public static final ConfEntry<Integer> TEST_RANKS_PER_NODE =
      conf("spark.treeline.test.ranksPerNode")
      .doc("Test only: when positive, barrier task p is placed on simulated node p / n instead "
          + "of its host, so that one machine runs several nodes (shared memory inside, TCP "
          + "across). 0 uses the real host identity.")
      .intConf().check(n -> n >= 0, "must be 0 or positive").internal()
      .createWithDefault(0);

  /**
   * Where the jar carries docs/configuration.md (the build copies it there), so that a message
   * can point a user holding only the jar at it.
   */
  public static final String DOC_RESOURCE = "META-INF/treeline/configuration.md";

  private final Map<String, String> settings;

  /** Reads and validates every {@code spark.treeline.*} key of {@code settings}. */
  public TreelineConf(Map<String, String> settings) {
    for (String k : settings.keySet()) {
      if (k.startsWith(PREFIX) && ENTRIES.stream().noneMatch(e -> e.key().equals(k))) {
        throw new IllegalArgumentException("unknown configuration key " + k + closest(k)
            + "; the keys are " + publicKeys() + " (the jar's " + DOC_RESOURCE
            + " documents each)");
      }
    }
    this.settings = Map.copyOf(settings);
    for (ConfEntry<?> e : ENTRIES) {
      get(e); // validate now, not at first use inside a task
    }
  }

  public <T> T get(ConfEntry<T> e) {
    String raw = settings.get(e.key());
    return raw == null ? e.defaultValue() : e.parse(raw);
  }

  /** The keys a user sets, comma-separated, for messages. */
  static String publicKeys() {
    StringBuilder b = new StringBuilder();
    for (ConfEntry<?> e : ENTRIES) {
      if (!e.internal()) {
        b.append(b.length() == 0 ? "" : ", ").append(e.key());
      }
    }
    return b.toString();
  }

  public static List<ConfEntry<?>> entries() {
    return Collections.unmodifiableList(ENTRIES);
  }

  /** docs/configuration.md, generated. */
  public static String markdown() {
    StringBuilder b = new StringBuilder();
    b.append("# Configuration\n\n")
        .append("<!-- Generated from io.treeline.conf.TreelineConf; do not edit. Regenerate with\n")
        .append("     ./mvnw -q -Pdocs -pl native-collectives -am process-classes -->\n\n")
        .append("Set these as Spark configuration (`--conf spark.treeline.timeout=120s`). ")
        .append("Unknown `spark.treeline.*` keys are refused at start-up. Sizes take `b`, `k`, ")
        .append("`m`, `g` suffixes (binary multiples); durations `ms`, `s`, `min`, `h`.\n\n");
    table(b, false);
    b.append("\n## Test-only keys\n\n");
    table(b, true);
    b.append("\n## Environment variables\n\n")
        .append("Read by processes started outside Spark (`./treeline run`, torchrun style); a ")
        .append("Spark job needs none of them.\n\n");
    TreelineEnv.table(b);
    b.append("\n## JVM properties\n\n")
        .append("Tuning knobs of the host path, kept for measuring their effect; the defaults are ")
        .append("the measured choices (docs/BENCHMARKS.md). Pass them as `-D` options: Spark's ")
        .append("`spark.executor.extraJavaOptions`, or `TREELINE_JAVA_OPTS` for `./treeline`.\n\n");
    io.treeline.core.Tuning.table(b);
    return b.toString();
  }

  private static void table(StringBuilder b, boolean internal) {
    b.append("| key | type | default | meaning |\n|---|---|---|---|\n");
    for (ConfEntry<?> e : ENTRIES) {
      if (e.internal() == internal) {
        b.append("| `").append(e.key()).append("` | ").append(e.type()).append(" | `")
            .append(e.defaultText()).append("` | ").append(e.doc()).append(" |\n");
      }
    }
  }

  /** Writes docs/configuration.md under the given repository root (default: "."). */
  public static void main(String[] args) throws IOException {
    Path root = Path.of(args.length > 0 ? args[0] : ".");
    Path out = root.resolve("docs").resolve("configuration.md");
    Files.createDirectories(out.getParent());
    Files.writeString(out, markdown());
    System.out.println("wrote " + out);
  }

  // ---- declaration DSL -------------------------------------------------------------------------

  private static Builder conf(String key) {
    return new Builder(key);
  }

  private static boolean parses(String s) {
    try {
      Algorithm.parse(s);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private static String closest(String key) {
    String best = null;
    int bestD = Integer.MAX_VALUE;
    for (ConfEntry<?> e : ENTRIES) {
      int d = distance(key.toLowerCase(Locale.ROOT), e.key().toLowerCase(Locale.ROOT));
      if (d < bestD) {
        bestD = d;
        best = e.key();
      }
    }
    return best != null && bestD <= 4 ? " (did you mean " + best + "?)" : "";
  }

  private static int distance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        cur[j] = Math.min(Math.min(cur[j - 1], prev[j]) + 1,
            prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1));
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }

  static final class Builder {
    private final String key;
    private String doc = "";
    private boolean internal;

    Builder(String key) {
      this.key = key;
    }

    Builder doc(String d) {
      this.doc = d;
      return this;
    }

    Builder internal() {
      this.internal = true;
      return this;
    }

    Typed<Duration> durationConf() {
      return new Typed<>(this, "duration", Sizes::duration, Sizes::durationText);
    }

    Typed<Long> bytesConf() {
      return new Typed<>(this, "bytes", Sizes::bytes, Sizes::bytesText);
    }

    Typed<Integer> intConf() {
      return new Typed<>(this, "int", Integer::parseInt, String::valueOf);
    }

    Typed<String> stringConf() {
      return new Typed<>(this, "string", s -> s.toLowerCase(Locale.ROOT), s -> s);
    }
  }

  static final class Typed<T> {
    private final Builder b;
    private final String type;
    private final Function<String, T> parser;
    private final Function<T, String> text;
    private Predicate<T> check = v -> true;
    private String checkDoc = "";

    Typed(Builder b, String type, Function<String, T> parser, Function<T, String> text) {
      this.b = b;
      this.type = type;
      this.parser = parser;
      this.text = text;
    }

    Typed<T> check(Predicate<T> c, String d) {
      this.check = c;
      this.checkDoc = d;
      return this;
    }

    Typed<T> internal() {
      b.internal();
      return this;
    }

    ConfEntry<T> createWithDefault(T dflt) {
      ConfEntry<T> e = new ConfEntry<>(b.key, b.doc, type, dflt, text.apply(dflt), parser, check,
          checkDoc, b.internal);
      ENTRIES.add(e);
      return e;
    }
  }
}
