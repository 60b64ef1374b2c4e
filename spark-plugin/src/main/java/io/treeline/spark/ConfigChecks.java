package io.treeline.spark;

import io.treeline.conf.TreelineConf;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a Treeline job's Spark configuration must satisfy, one message per problem, each saying
 * what to change. Pure: it reads a map, so it is tested without a SparkContext.
 */
public final class ConfigChecks {
  private ConfigChecks() {
  }

  public static List<String> problems(Map<String, String> conf) {
    return problems(conf, "", false);
  }

  /**
   * With the driver's own classpath ({@code java.class.path}) and whether Spark runs in its
   * testing mode ({@code spark.testing}), in which local-cluster hands that classpath to its
   * executors.
   */
  public static List<String> problems(Map<String, String> conf, String driverClasspath,
      boolean sparkTesting) {
    List<String> p = new ArrayList<>();
    String master = conf.getOrDefault("spark.master", "");
    boolean local = master.startsWith("local") && !master.startsWith("local-cluster");
    if (Boolean.parseBoolean(conf.getOrDefault("spark.dynamicAllocation.enabled", "false"))) {
      p.add("spark.dynamicAllocation.enabled=true: barrier stages cannot run with dynamic "
          + "allocation; set spark.dynamicAllocation.enabled=false and size the job with "
          + "spark.executor.instances (one executor per GPU or per rank)");
    }
    if (!local) {
      int cores = intOf(conf, "spark.executor.cores", 1);
      int taskCpus = intOf(conf, "spark.task.cpus", 1);
      if (cores / Math.max(1, taskCpus) > 1) {
        p.add("spark.executor.cores=" + cores + " with spark.task.cpus=" + taskCpus + " runs "
            + cores / taskCpus + " tasks per executor; Treeline needs one barrier task per "
            + "executor: set spark.task.cpus=" + cores + " (or spark.executor.cores="
            + taskCpus + ")");
      }
    }
    if (master.startsWith("local-cluster")) {
      // each executor of local-cluster starts in its own work directory (work/app-ID/N):
      // relative entries resolve there, to nothing, and the executors fail to load the job's
      // classes (a ClassNotFoundException, or a ClassCastException of SerializedLambda when
      // a lambda's class is missing, or a plugin that cannot be created)
      List<String> relative = new ArrayList<>();
      if (sparkTesting) {
        relative.addAll(relativeEntries(driverClasspath));
      }
      relative.addAll(relativeEntries(conf.getOrDefault("spark.executor.extraClassPath", "")));
      if (!relative.isEmpty()) {
        p.add("relative classpath entries " + relative + " with " + master + ": its executors "
            + "start in their own work directories, where these do not resolve (they then fail "
            + "with ClassNotFoundException, or ClassCastException: cannot assign instance of "
            + "SerializedLambda); give absolute paths, or pass jars with --jars");
      }
    }
    String execGpu = conf.get("spark.executor.resource.gpu.amount");
    String taskGpu = conf.get("spark.task.resource.gpu.amount");
    if (execGpu != null && !isOne(execGpu)) {
      p.add("spark.executor.resource.gpu.amount=" + execGpu + ": Treeline runs one executor per "
          + "GPU; set it to 1 and raise spark.executor.instances instead");
    }
    if (execGpu != null && taskGpu == null) {
      p.add("spark.executor.resource.gpu.amount is set but spark.task.resource.gpu.amount is "
          + "not: set spark.task.resource.gpu.amount=1 so the barrier task owns the GPU");
    } else if (taskGpu != null && !isOne(taskGpu)) {
      p.add("spark.task.resource.gpu.amount=" + taskGpu + ": set it to 1 (one GPU per task)");
    }
    Map<String, String> ours = new HashMap<>();
    for (Map.Entry<String, String> e : conf.entrySet()) {
      if (e.getKey().startsWith(TreelineConf.PREFIX)) {
        ours.put(e.getKey(), e.getValue());
      }
    }
    try {
      new TreelineConf(ours);
    } catch (IllegalArgumentException e) {
      p.add(e.getMessage());
    }
    return p;
  }

  /** Entries of a classpath string that are relative paths (YARN's {{...}}, $VARs kept). */
  static List<String> relativeEntries(String classpath) {
    List<String> out = new ArrayList<>();
    for (String e : classpath.split(java.io.File.pathSeparator)) {
      String t = e.trim();
      if (!t.isEmpty() && !t.startsWith("/") && !t.startsWith("{{") && !t.startsWith("$")) {
        out.add(t);
      }
    }
    return out;
  }

  private static boolean isOne(String v) {
    try {
      return Double.parseDouble(v.trim()) == 1.0;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private static int intOf(Map<String, String> conf, String key, int dflt) {
    String v = conf.get(key);
    if (v == null) {
      return dflt;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      return dflt;
    }
  }
}
