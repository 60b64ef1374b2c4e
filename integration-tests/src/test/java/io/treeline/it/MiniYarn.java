package io.treeline.it;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.config.Configurator;

/** A started MiniYARNCluster set up as Spark's BaseYarnClusterSuite sets up its own. */
final class MiniYarn {
  private MiniYarn() {
  }

  /**
   * Starts {@code nodeManagers} NodeManagers of {@code nodeManagerMb} MiB each under
   * {@code work} and waits until the ResourceManager has its address and every NodeManager
   * registered (at most {@code registerMillis}).
   */
  static MiniYARNCluster start(String name, Path work, int nodeManagers, int nodeManagerMb,
      long registerMillis) throws Exception {
    YarnConfiguration yc = new YarnConfiguration();
    // hadoop-client-minicluster has no capacity-scheduler.xml: one queue with everything, as
    // BaseYarnClusterSuite; the AM may take the whole queue (client mode: a small launcher)
    yc.set("yarn.scheduler.capacity.root.queues", "default");
    yc.setInt("yarn.scheduler.capacity.root.default.capacity", 100);
    yc.setFloat("yarn.scheduler.capacity.root.default.user-limit-factor", 1);
    yc.setInt("yarn.scheduler.capacity.root.default.maximum-capacity", 100);
    yc.set("yarn.scheduler.capacity.root.default.state", "RUNNING");
    yc.set("yarn.scheduler.capacity.root.default.acl_submit_applications", "*");
    yc.set("yarn.scheduler.capacity.root.default.acl_administer_queue", "*");
    yc.setInt("yarn.scheduler.capacity.node-locality-delay", -1);
    yc.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 1.0f);
    // a nearly full disk must not mark the only node unhealthy (the stage would never start)
    yc.set("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage",
        "100.0");
    // the minicluster gives each NodeManager 4 GiB unless told (it overrides the NM's own
    // key). A JVM's reserved virtual memory (class space, code cache, malloc arenas) can pass
    // 2.1 x its container without being in use: check physical memory only
    yc.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", nodeManagerMb);
    yc.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
    yc.set("yarn.resourcemanager.hostname", org.apache.spark.util.Utils.localHostNameForURI());
    yc.set("hadoop.tmp.dir", work.resolve("hadoop-tmp").toString());
    // the NodeManager keeps every container's logs and work directory (under target/) for a
    // post-mortem, and lets go of a finished application at once: with the defaults (keep
    // the logs 3 h, delete the rest) its stop waits 17 s for those timers
    yc.setInt("yarn.nodemanager.log.retain-seconds", 0);
    yc.setInt("yarn.nodemanager.delete.debug-delay-sec", -1);
    MiniYARNCluster yarn = new MiniYARNCluster(name, nodeManagers, 1, 1);
    yarn.init(yc);
    yarn.start();
    // start() can return before the RM has put its bound port into the configuration
    // (BaseYarnClusterSuite): wait for it, or the client would dial port 0
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (yarn.getConfig().get(YarnConfiguration.RM_ADDRESS).endsWith(":0")) {
      if (System.nanoTime() > until) {
        throw new IllegalStateException("the MiniYARNCluster's ResourceManager has no address "
            + "after 10 s");
      }
      Thread.sleep(100);
    }
    if (!yarn.waitForNodeManagersToConnect(registerMillis)) {
      throw new IllegalStateException(nodeManagers + " NodeManager(s) did not register with the "
          + "ResourceManager within " + registerMillis + " ms");
    }
    return yarn;
  }

  /** Stops {@code yarn} (null: nothing) with Hadoop's logging off meanwhile. */
  static void stop(MiniYARNCluster yarn) {
    if (yarn == null) {
      return;
    }
    // the minicluster's threads log their interruption at ERROR as it stops: not news
    Level level = LogManager.getLogger("org.apache.hadoop").getLevel();
    Configurator.setLevel("org.apache.hadoop", Level.OFF);
    try {
      yarn.stop();
    } finally {
      Configurator.setLevel("org.apache.hadoop", level);
    }
  }
}
