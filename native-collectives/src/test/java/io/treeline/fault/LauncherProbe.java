package io.treeline.fault;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.launch.ProcessLauncher;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * A launcher for {@link LauncherLeavesNothingTest}: {@code main()} starts two ranks through
 * {@link ProcessLauncher} and echoes their output; each rank ({@code main("rank")}) sets up a
 * communicator (segments, ports), prints its pid and then waits, as a long job does, until its
 * launcher is killed.
 */
public final class LauncherProbe {
  private LauncherProbe() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("rank")) {
      try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(30));
          HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
        c.barrier();
        System.out.println("PROBE-RANK pid=" + ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(120_000);
      }
      return;
    }
    ProcessLauncher.run(new int[] {2}, List.of("-Xmx96m", "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1"), List.of(LauncherProbe.class.getName(), "rank"), Map.of(),
        Duration.ofSeconds(120), System.out, -1);
  }
}
