package io.treeline.conf;

import java.util.Map;

/**
 * Every environment variable Treeline reads, declared once with what it means and who sets it
 * (docs/configuration.md lists them, generated from here). Processes started outside Spark
 * (torchrun style, {@code ./treeline run}) find each other through the first five; Spark jobs
 * need none of them.
 */
public enum TreelineEnv {
  RANK("TREELINE_RANK", "This process's rank, 0 .. world size - 1.",
      "`./treeline run`, or whatever starts the ranks"),
  WORLD_SIZE("TREELINE_WORLD_SIZE", "How many ranks the job has.",
      "`./treeline run`, or whatever starts the ranks"),
  MASTER_ADDR("TREELINE_MASTER_ADDR", "Host of the TCP store that rank 0 serves; on loopback, "
      + "every rank also binds its peer port to 127.0.0.1.", "`./treeline run`, or you"),
  MASTER_PORT("TREELINE_MASTER_PORT", "Port of that store.", "`./treeline run`, or you"),
  SECRET("TREELINE_SECRET", "The job secret (hex) every connection proves with an HMAC "
      + "challenge before it carries data; without it, connections are refused.",
      "`./treeline run` (random per job), or you"),
  NODE_ID("TREELINE_NODE_ID", "Overrides the node identity (host name + boot id): ranks with "
      + "the same id share memory. Simulates several nodes on one machine.",
      "`./treeline run --nodes N`, tests"),
  ADDR("TREELINE_ADDR", "The address a rank binds its peer port to and publishes, instead of "
      + "the one its host name resolves to (a multi-homed host).", "you"),
  GPUS("TREELINE_GPUS", "How many GPUs the GPU benchmark and GPU tests spread their ranks over "
      + "(default 1).", "`scripts/device/run-multi-gpu.sh`, you"),
  GPU_ADDRESSES("TREELINE_GPU_ADDRESSES", "What the GPU discovery script "
      + "(`bin/getGpusResources.sh`) reports as Spark's GPU addresses: `index` (nvidia-smi's, "
      + "the default) or `uuid`.", "you, in the executor's environment"),
  LAUNCHER_PID("TREELINE_LAUNCHER_PID", "The process id of the launcher that started this "
      + "rank: the rank exits when that process is gone (the launcher was killed), so that no "
      + "rank outlives its job.", "`./treeline run` (`ProcessLauncher`)"),
  JAVA_OPTS("TREELINE_JAVA_OPTS", "Extra JVM options for the `./treeline` launcher.", "you");

  private final String key;
  private final String doc;
  private final String setBy;

  TreelineEnv(String key, String doc, String setBy) {
    this.key = key;
    this.doc = doc;
    this.setBy = setBy;
  }

  /** The variable's name, e.g. {@code TREELINE_RANK}. */
  public String key() {
    return key;
  }

  public String doc() {
    return doc;
  }

  /** The value in this process's environment, or null when unset or blank. */
  public String get() {
    return get(System.getenv());
  }

  /** The value in {@code env}, or null when unset or blank. */
  public String get(Map<String, String> env) {
    String v = env.get(key);
    return v == null || v.isBlank() ? null : v.trim();
  }

  /** The markdown table of docs/configuration.md's environment section. */
  static void table(StringBuilder b) {
    b.append("| variable | meaning | set by |\n|---|---|---|\n");
    for (TreelineEnv e : values()) {
      b.append("| `").append(e.key).append("` | ").append(e.doc).append(" | ")
          .append(e.setBy).append(" |\n");
    }
  }
}
