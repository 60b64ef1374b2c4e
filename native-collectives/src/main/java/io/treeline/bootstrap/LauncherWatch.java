package io.treeline.bootstrap;

import io.treeline.conf.TreelineEnv;
import java.util.Optional;

/**
 * A rank started by a launcher ({@code ./treeline run}) ends when the launcher does, however the
 * launcher ended (SIGKILL leaves it no time to stop its ranks): a daemon thread checks every
 * {@link #INTERVAL_MS} ms that the process in {@code TREELINE_LAUNCHER_PID} is alive and, when
 * it is not, exits through the shutdown hooks (which close communicators and delete segment
 * files), or halts if they take more than a few seconds.
 */
public final class LauncherWatch {
  public static final long INTERVAL_MS = 200;
  private static volatile Thread started;

  private LauncherWatch() {
  }

  /** Starts the watch if this process has a launcher; once per process. */
  public static synchronized void start() {
    String pid = TreelineEnv.LAUNCHER_PID.get();
    if (started != null || pid == null) {
      return;
    }
    Optional<ProcessHandle> launcher;
    try {
      launcher = ProcessHandle.of(Long.parseLong(pid));
    } catch (NumberFormatException e) {
      throw new BootstrapException(TreelineEnv.LAUNCHER_PID.key() + "='" + pid + "' is not a "
          + "process id");
    }
    Thread t = new Thread(() -> watch(launcher.orElse(null), pid), "treeline-launcher-watch");
    t.setDaemon(true);
    t.start();
    started = t;
  }

  private static void watch(ProcessHandle launcher, String pid) {
    try {
      while (launcher != null && launcher.isAlive()) {
        Thread.sleep(INTERVAL_MS);
      }
    } catch (InterruptedException e) {
      return;
    }
    System.err.println("treeline: the launcher (pid " + pid + ") is gone; this rank (pid "
        + ProcessHandle.current().pid() + ") exits");
    Thread halt = new Thread(() -> {
      try {
        Thread.sleep(5000);
      } catch (InterruptedException e) {
        // halting now
      }
      Runtime.getRuntime().halt(143);
    }, "treeline-launcher-watch-halt");
    halt.setDaemon(true);
    halt.start();
    System.exit(143);
  }
}
