package io.treeline.spark;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * The class named in {@code --conf spark.plugins=io.treeline.spark.TreelinePlugin}. Tiny, as
 * spark-rapids' SQLPlugin: it hands off to {@link TreelineDriverPlugin} (checks the job's
 * configuration at start-up) and {@link TreelineExecutorPlugin} (metrics, GPU binding).
 */
public final class TreelinePlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new TreelineDriverPlugin();
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new TreelineExecutorPlugin();
  }
}
