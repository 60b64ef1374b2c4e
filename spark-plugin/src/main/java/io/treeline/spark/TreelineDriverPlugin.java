package io.treeline.spark;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.PluginContext;
import scala.Tuple2;

/**
 * Driver side: refuses, at SparkContext start-up, a configuration that barrier-mode training
 * cannot run with, listing every problem with what to change, instead of letting the first
 * barrier stage hang or fail later.
 */
public final class TreelineDriverPlugin implements DriverPlugin {
  private static final System.Logger LOG = System.getLogger("io.treeline.spark");

  @Override
  public Map<String, String> init(SparkContext sc, PluginContext ctx) {
    Map<String, String> conf = new HashMap<>();
    for (Tuple2<String, String> kv : sc.getConf().getAll()) {
      conf.put(kv._1(), kv._2());
    }
    List<String> problems = ConfigChecks.problems(conf,
        System.getProperty("java.class.path", ""),
        System.getProperty("spark.testing") != null || System.getenv("SPARK_TESTING") != null);
    if (!problems.isEmpty()) {
      StringBuilder b = new StringBuilder("Treeline cannot run with this Spark configuration:");
      for (String p : problems) {
        b.append("\n  - ").append(p);
      }
      throw new IllegalArgumentException(b.toString());
    }
    LOG.log(System.Logger.Level.INFO, "Treeline enabled on " + sc.master());
    return Map.of();
  }

  /** An executor's plugin refusing to start (its GPU), sent before it exits. */
  public record Refusal(String executorId, String reason) implements java.io.Serializable {
  }

  @Override
  public Object receive(Object message) {
    if (message instanceof Refusal r) {
      LOG.log(System.Logger.Level.ERROR, "Treeline: executor " + r.executorId()
          + " did not start: " + r.reason());
      return "logged";
    }
    throw new IllegalArgumentException("Treeline's driver plugin got an unknown message: "
        + message);
  }
}
