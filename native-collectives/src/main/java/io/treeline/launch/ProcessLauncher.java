package io.treeline.launch;

import io.treeline.bootstrap.NodeIdentity;
import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.conf.TreelineEnv;
import io.treeline.transport.shm.Leftovers;
import io.treeline.transport.shm.SharedSegment;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Starts the ranks of a job as separate JVMs on this machine, torchrun style: rank r gets
 * {@code TREELINE_RANK}, {@code _WORLD_SIZE}, {@code _MASTER_ADDR}, {@code _MASTER_PORT}, a
 * fresh {@code _SECRET} shared by the job, and {@code TREELINE_NODE_ID=sim-node-<n>} so that
 * the ranks form simulated nodes. Ranks are numbered node-major. Output lines are prefixed
 * with the rank when echoed. When a rank fails, the others get a grace period to fail on their
 * own (they are told through the transports) and are then killed. Nothing outlives the run: a
 * shutdown hook stops the ranks when the launcher gets SIGTERM, each rank exits when it sees the
 * launcher gone ({@code TREELINE_LAUNCHER_PID}, for SIGKILL), and segment files of ranks that
 * died in set-up are deleted at the end.
 */
public final class ProcessLauncher {
  /** One rank's end: its exit code and everything it printed. */
  public record Result(int rank, int exitCode, String output) {
  }

  private ProcessLauncher() {
  }

  /**
   * The module options a rank JVM of this JDK takes: {@code jdk.incubator.vector} (the host
   * reducers' Vector API; the scalar reducer without it) and {@code jdk.incubator.foreign} with
   * native access (the TMA GEMM's tensor maps; the cp.async kernels without it), each where the
   * JDK has the module (the foreign one is JDK 17-20 only).
   */
  public static List<String> moduleOptions() {
    java.lang.module.ModuleFinder system = java.lang.module.ModuleFinder.ofSystem();
    List<String> o = new java.util.ArrayList<>();
    if (system.find("jdk.incubator.vector").isPresent()) {
      o.add("--add-modules=jdk.incubator.vector");
    }
    if (system.find("jdk.incubator.foreign").isPresent()) {
      o.add("--add-modules=jdk.incubator.foreign");
      o.add("--enable-native-access=ALL-UNNAMED");
    }
    return o;
  }

  /**
   * @param ranksPerNode ranks on each simulated node
   * @param jvmArgs JVM options for every rank (heap, direct memory)
   * @param mainAndArgs the main class, then its arguments
   * @param echo where to copy rank output as it comes, prefixed with "[rank r] "; null for none
   * @param echoRanks which ranks to echo (-1: all)
   */
  public static List<Result> run(int[] ranksPerNode, List<String> jvmArgs,
      List<String> mainAndArgs, Map<String, String> extraEnv, Duration timeout,
      PrintStream echo, int echoRanks) {
    int world = 0;
    for (int r : ranksPerNode) {
      world += r;
    }
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = System.getProperty("java.class.path");
    int port = freePort();
    byte[] secretBytes = new byte[24];
    new SecureRandom().nextBytes(secretBytes);
    String secret = HexFormat.of().formatHex(secretBytes);
    List<Process> procs = new ArrayList<>();
    List<StringBuilder> outs = new ArrayList<>();
    List<Thread> readers = new ArrayList<>();
    // SIGTERM or ^C to the launcher stops its ranks; under SIGKILL they see it gone
    // (LauncherWatch) and exit by themselves
    Thread stopRanks = new Thread(() -> stop(procs), "treeline-launcher-stop");
    Runtime.getRuntime().addShutdownHook(stopRanks);
    int rank = 0;
    try {
      for (int node = 0; node < ranksPerNode.length; node++) {
        for (int l = 0; l < ranksPerNode[node]; l++, rank++) {
          List<String> cmd = new ArrayList<>();
          cmd.add(java);
          cmd.addAll(jvmArgs);
          cmd.add("-cp");
          cmd.add(cp);
          cmd.addAll(mainAndArgs);
          ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
          Map<String, String> env = pb.environment();
          env.putAll(extraEnv);
          env.put(TcpStoreBootstrap.RANK, Integer.toString(rank));
          env.put(TcpStoreBootstrap.WORLD_SIZE, Integer.toString(world));
          env.put(TcpStoreBootstrap.MASTER_ADDR, "127.0.0.1");
          env.put(TcpStoreBootstrap.MASTER_PORT, Integer.toString(port));
          env.put(TcpStoreBootstrap.SECRET, secret);
          env.put(NodeIdentity.ENV, "sim-node-" + node);
          env.put(TreelineEnv.LAUNCHER_PID.key(), Long.toString(ProcessHandle.current().pid()));
          Process p = pb.start();
          synchronized (procs) {
            procs.add(p);
          }
          StringBuilder sb = new StringBuilder();
          outs.add(sb);
          int rr = rank;
          Thread t = new Thread(() -> pump(p, sb, rr, echo, echoRanks), "rank-" + rr + "-out");
          t.setDaemon(true);
          t.start();
          readers.add(t);
        }
      }
      long deadline = System.nanoTime() + timeout.toNanos();
      boolean someoneFailed = false;
      long graceDeadline = Long.MAX_VALUE;
      while (true) {
        boolean allDone = true;
        for (Process p : procs) {
          if (p.isAlive()) {
            allDone = false;
          } else if (p.exitValue() != 0 && !someoneFailed) {
            someoneFailed = true;
            graceDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
          }
        }
        if (allDone) {
          break;
        }
        long now = System.nanoTime();
        if (now - deadline > 0 || now - graceDeadline > 0) {
          for (Process p : procs) {
            p.destroyForcibly();
          }
          for (Process p : procs) {
            p.waitFor(10, TimeUnit.SECONDS);
          }
          break;
        }
        Thread.sleep(20);
      }
      for (Thread t : readers) {
        t.join(5000);
      }
    } catch (IOException e) {
      procs.forEach(Process::destroyForcibly);
      throw new UncheckedIOException("cannot start rank " + rank + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      procs.forEach(Process::destroyForcibly);
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the ranks ran", e);
    }
    try {
      Runtime.getRuntime().removeShutdownHook(stopRanks);
    } catch (IllegalStateException e) {
      // shutting down already: the hook runs
    }
    // a rank killed during set-up could not delete its segment file; its owner is dead now
    Leftovers.sweep(SharedSegment.directory());
    List<Result> results = new ArrayList<>();
    for (int r = 0; r < procs.size(); r++) {
      Process p = procs.get(r);
      int code = p.isAlive() ? -1 : p.exitValue();
      synchronized (outs.get(r)) {
        results.add(new Result(r, code, outs.get(r).toString()));
      }
    }
    return results;
  }

  /** Stops every rank still running: SIGTERM, then SIGKILL after two seconds. */
  private static void stop(List<Process> procs) {
    List<Process> all;
    synchronized (procs) {
      all = new ArrayList<>(procs);
    }
    all.forEach(Process::destroy);
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
    for (Process p : all) {
      try {
        if (!p.waitFor(Math.max(1, until - System.nanoTime()), TimeUnit.NANOSECONDS)) {
          p.destroyForcibly();
        }
      } catch (InterruptedException e) {
        p.destroyForcibly();
      }
    }
    Leftovers.sweep(SharedSegment.directory());
  }

  private static void pump(Process p, StringBuilder sb, int rank, PrintStream echo,
      int echoRanks) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(),
        StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        synchronized (sb) {
          sb.append(line).append('\n');
        }
        if (echo != null && (echoRanks < 0 || echoRanks == rank)) {
          synchronized (echo) {
            echo.println(echoRanks == rank ? line : "[rank " + rank + "] " + line);
          }
        }
      }
    } catch (IOException e) {
      // the process ended
    }
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free port for the store: " + e.getMessage(), e);
    }
  }
}
