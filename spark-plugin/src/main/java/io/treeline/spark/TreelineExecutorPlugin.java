package io.treeline.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.treeline.comm.CommStats;
import io.treeline.plan.Algorithm;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * Executor side: publishes Treeline's counters (collectives, bytes, time per algorithm,
 * failures) as Spark metrics ({@code plugin.io.treeline.spark.TreelinePlugin.*}) and logs the
 * GPU Spark assigned. Init failures are logged with their reason and rethrown, so a
 * half-initialised executor fails fast instead of lingering until its heartbeat times out.
 */
public final class TreelineExecutorPlugin implements ExecutorPlugin {
  private static final System.Logger LOG = System.getLogger("io.treeline.spark");

  @Override
  public void init(PluginContext ctx, Map<String, String> extraConf) {
    try {
      MetricRegistry m = ctx.metricRegistry();
      for (Algorithm a : Algorithm.values()) {
        CommStats.Counters c = CommStats.of(a.id());
        m.register(MetricRegistry.name("collectives", a.id(), "calls"), (Gauge<Long>) c::calls);
        m.register(MetricRegistry.name("collectives", a.id(), "bytes"), (Gauge<Long>) c::bytes);
        m.register(MetricRegistry.name("collectives", a.id(), "timeMs"),
            (Gauge<Long>) () -> c.nanos() / 1_000_000);
      }
      m.register("collectives.failures", (Gauge<Long>) CommStats::failures);
      // the node's GPUs and PCIe link health, once per executor (reading sysfs is cheap)
      try {
        io.treeline.topology.TopologyReport topo = io.treeline.topology.TopologyReport.collect(
            java.nio.file.Path.of("/sys"), null, null, null);
        m.register("pcie.linkWarnings", (Gauge<Integer>) () -> topo.warnings().size());
        for (io.treeline.topology.LinkHealth.Warning w : topo.warnings()) {
          LOG.log(System.Logger.Level.WARNING, "Treeline: " + w);
        }
        LOG.log(System.Logger.Level.INFO, "Treeline topology of executor " + ctx.executorID()
            + ":\n" + topo.text());
      } catch (java.io.IOException e) {
        LOG.log(System.Logger.Level.WARNING, "Treeline: cannot read the topology: " + e);
      }
      ResourceInformation gpu = ctx.resources().get("gpu");
      // not ctx.hostname(): an executor's RpcEnv has no address of its own (it throws)
      LOG.log(System.Logger.Level.INFO, "Treeline executor " + ctx.executorID() + " on node "
          + io.treeline.bootstrap.NodeIdentity.local() + ": " + (gpu == null ? "no GPU assigned, host path"
          : "GPU address(es) " + String.join(",", gpu.addresses())));
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "Treeline executor plugin failed to initialise: " + e,
          e);
      throw e;
    }
  }
}
