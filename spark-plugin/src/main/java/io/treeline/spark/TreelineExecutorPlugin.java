package io.treeline.spark;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.treeline.barrier.GpuBinding;
import io.treeline.comm.CommStats;
import io.treeline.kernels.GpuDevices;
import io.treeline.plan.Algorithm;
import io.treeline.topology.LinkHealth;
import io.treeline.topology.LinkMonitor;
import io.treeline.topology.PciDevice;
import io.treeline.topology.TopologyReport;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * Executor side: publishes Treeline's counters (collectives, bytes, time per algorithm,
 * failures) and the PCIe links of the node's GPUs and NICs (warnings, link bandwidth share, AER
 * counts) as Spark metrics ({@code plugin.io.treeline.spark.TreelinePlugin.*}), and logs the
 * node's topology report and the GPU Spark assigned, bound by {@link GpuBinding} (an executor
 * whose GPU address names no GPU it can see is refused at start-up). Init failures are logged with their reason
 * and rethrown, so a half-initialised executor fails fast instead of lingering until its
 * heartbeat times out.
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
      // the node's GPUs and PCIe link health, logged once per executor (reading sysfs is
      // cheap); the links are re-read at every metrics poll, so a link that degrades or starts
      // logging AER errors during the job shows in the metrics, not only at start-up
      try {
        Path sys = Path.of("/sys");
        // GPUs named as the driver sees them in this executor (under isolation: only its own)
        GpuDevices.Listing listing = GpuDevices.list();
        List<TopologyReport.Gpu> gpus = new ArrayList<>();
        for (GpuDevices.Gpu g : listing.gpus()) {
          gpus.add(new TopologyReport.Gpu(g.ordinal(), g.uuid(), g.pciBusId(), g.name(), -1));
        }
        TopologyReport topo = TopologyReport.collect(TopologyReport.Sources.live(sys)
            .driver(gpus, listing.unavailable()));
        LinkMonitor links = new LinkMonitor(sys);
        m.register("pcie.linkWarnings", (Gauge<Integer>) () -> links.warnings().size());
        for (String bdf : links.devices()) {
          PciDevice d = links.now(bdf);
          String key = d.role().toLowerCase(Locale.ROOT) + "." + bdf.replaceAll("[:.]", "_");
          m.register(MetricRegistry.name("pcie", key, "linkPercent"),
              (Gauge<Double>) () -> LinkMonitor.linkPercent(links.now(bdf)));
          m.register(MetricRegistry.name("pcie", key, "aerCorrectable"),
              (Gauge<Long>) () -> links.now(bdf).aerCorrectable());
          m.register(MetricRegistry.name("pcie", key, "aerUncorrectable"),
              (Gauge<Long>) () -> {
                PciDevice n = links.now(bdf);
                return n.aerNonFatal() < 0 ? -1 : n.aerNonFatal() + Math.max(0, n.aerFatal());
              });
        }
        for (LinkHealth.Warning w : topo.warnings()) {
          LOG.log(System.Logger.Level.WARNING, "Treeline: " + w);
        }
        LOG.log(System.Logger.Level.INFO, "Treeline topology of executor " + ctx.executorID()
            + ":\n" + topo.text());
      } catch (IOException | RuntimeException e) {
        // a node whose topology cannot be read still runs collectives: say so, go on
        LOG.log(System.Logger.Level.WARNING, "Treeline: cannot read the topology: " + e);
      }
      ResourceInformation gpu = ctx.resources().get("gpu");
      String where = "Treeline executor " + ctx.executorID() + " on node "
          + io.treeline.bootstrap.NodeIdentity.local();
      if (gpu == null || gpu.addresses().length == 0) {
        LOG.log(System.Logger.Level.INFO, where + ": no GPU assigned, host path");
      } else {
        // refuse at start-up an executor whose GPU address names no GPU it can see: its
        // tasks would otherwise fail one by one, or run on another rank's GPU
        List<GpuBinding.Bound> bound;
        try {
          bound = GpuBinding.resolveAll(gpu);
        } catch (IllegalStateException e) {
          String why = where + " refuses its GPU: " + e.getMessage();
          // the driver logs it too: an executor's own log is hard to reach (YARN keeps it
          // with the container, local-cluster deletes it with the worker)
          try {
            ctx.ask(new TreelineDriverPlugin.Refusal(ctx.executorID(), why));
          } catch (Exception sendFailed) {
            e.addSuppressed(sendFailed);
          }
          throw new IllegalStateException(why, e);
        }
        LOG.log(System.Logger.Level.INFO, where + ": " + bound.stream().map(Object::toString)
            .collect(java.util.stream.Collectors.joining("; ")));
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.ERROR, "Treeline executor plugin failed to initialise: " + e,
          e);
      throw e;
    }
  }
}
