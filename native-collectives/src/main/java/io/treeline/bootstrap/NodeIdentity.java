package io.treeline.bootstrap;

import io.treeline.conf.TreelineEnv;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Which machine a rank runs on: ranks with the same identity share memory. Hostname plus the
 * kernel's boot id (two containers with one hostname on different hosts differ), unless
 * {@code TREELINE_NODE_ID} says otherwise, which is how several simulated nodes run on one
 * machine.
 */
public final class NodeIdentity {
  public static final String ENV = TreelineEnv.NODE_ID.key();

  private NodeIdentity() {
  }

  public static String local() {
    String forced = System.getenv(ENV);
    if (forced != null && !forced.isBlank()) {
      return forced.trim();
    }
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      host = System.getenv().getOrDefault("HOSTNAME", "unknown-host");
    }
    String boot = "";
    try {
      boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
    } catch (IOException | RuntimeException e) {
      // not Linux: the hostname alone
    }
    return boot.isEmpty() ? host : host + "/" + boot;
  }
}
