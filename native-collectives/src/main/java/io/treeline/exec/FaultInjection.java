package io.treeline.exec;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The fault suite's hook (tests only; off unless the system property {@value #PROPERTY} is
 * set): makes one rank die or stall at a named point of a named call, so that the suite can
 * check what every other rank sees. With the property unset, {@link #ON} is a constant false
 * and the hooks compile away.
 *
 * <p>{@code -Dtreeline.test.fault=rank=2,point=intra,call=3,action=kill,ms=4000}:
 * <ul>
 *   <li>{@code point}: {@code bootstrap} (in set-up, before the all-gather), {@code intra}
 *       (call {@code call}'s first peer-memory step), {@code network} (its first message step),
 *       {@code between} (after call {@code call - 1} returned, before call {@code call}
 *       starts);</li>
 *   <li>{@code action}: {@code kill} (the process halts at once, no shutdown hooks, as under
 *       SIGKILL), {@code freeze} (the process SIGSTOPs itself and is resumed after {@code ms}),
 *       {@code hang} (the rank's thread sleeps {@code ms}, its other threads run), {@code throw}
 *       (the call fails with an exception).</li>
 * </ul>
 * The rank is the bootstrap rank; {@code call} counts the communicator's calls from 1.
 *
 * <p>How often it fires: once per process by default; {@code times=N} (or {@code times=all})
 * lets it fire up to N times (every time) in this process, for ranks that are threads of one
 * JVM and one fault per attempt of a retried Spark stage; {@code once=PATH} lets it fire only
 * where it can create the file PATH (atomically), so that it fires once across processes and
 * restarted JVMs (a Spark stage whose first attempt is faulted and whose retry, in new executor
 * JVMs, must not be); the file holds the time it fired (epoch milliseconds) and
 * the process id, separated by a space.
 *
 * <p>The property is read again when it changes, so that tests in one JVM (Spark's local mode,
 * where tasks are threads) can set one fault after another; {@link #ON} is fixed when the class
 * loads, so such a JVM starts with the property set to {@code none} (no fault).
 */
public final class FaultInjection {
  public static final String PROPERTY = "treeline.test.fault";
  /** Whether a fault is configured in this JVM. */
  public static final boolean ON = System.getProperty(PROPERTY) != null;
  private static volatile String specText = ON ? System.getProperty(PROPERTY) : null;
  private static volatile Map<String, String> spec = ON ? parse(specText) : Map.of();
  private static int fired;
  /** For {@code freeze}: a shell started early (a spawn can take seconds on a loaded machine),
   * waiting for one line to stop this process. */
  private static final Process STOPPER = ON && "freeze".equals(spec.get("action"))
      ? stopper(Long.parseLong(spec.getOrDefault("ms", "5000"))) : null;

  private FaultInjection() {
  }

  private static Map<String, String> parse(String spec) {
    Map<String, String> m = new HashMap<>();
    for (String kv : spec.split(",")) {
      int eq = kv.indexOf('=');
      if (eq > 0) {
        m.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
    }
    return m;
  }

  /** Fires the configured fault if this is its rank, point and call, as often as it may. */
  public static void at(String point, int rank, long call) {
    Map<String, String> spec = current();
    if (!point.equals(spec.get("point"))
        || rank != Integer.parseInt(spec.getOrDefault("rank", "-1"))
        || call != Long.parseLong(spec.getOrDefault("call", "1")) && !point.equals("bootstrap")
        || !mayFire(spec)) {
      return;
    }
    String action = spec.getOrDefault("action", "kill");
    long ms = Long.parseLong(spec.getOrDefault("ms", "5000"));
    System.out.println("FAULT-INJECTED " + action + " at " + point + " of call #" + call
        + " on rank " + rank + " (pid " + ProcessHandle.current().pid() + ") t="
        + System.currentTimeMillis());
    System.out.flush();
    switch (action) {
      case "kill" -> Runtime.getRuntime().halt(137);
      case "freeze" -> freeze(ms);
      case "hang" -> sleep(ms);
      case "throw" -> throw new IllegalStateException("fault injected at " + point + " of call #"
          + call + " on rank " + rank);
      default -> throw new IllegalArgumentException(PROPERTY + ": no action " + action);
    }
  }

  /** The fault configured now: the property is parsed again when a test changed it. */
  private static Map<String, String> current() {
    String text = System.getProperty(PROPERTY);
    if (text != null && !text.equals(specText)) {
      synchronized (FaultInjection.class) {
        if (!text.equals(specText)) {
          spec = parse(text);
          fired = 0;
          specText = text;
        }
      }
    }
    return spec;
  }

  /** Counts this firing against {@code times} and {@code once}; false when it may not fire. */
  private static synchronized boolean mayFire(Map<String, String> spec) {
    String times = spec.getOrDefault("times", "1");
    if (!times.equals("all") && fired >= Integer.parseInt(times)) {
      return false;
    }
    String once = spec.get("once");
    if (once != null) {
      try {
        java.nio.file.Files.writeString(java.nio.file.Path.of(once),
            System.currentTimeMillis() + " " + ProcessHandle.current().pid(),
            java.nio.file.StandardOpenOption.CREATE_NEW,
            java.nio.file.StandardOpenOption.WRITE);
      } catch (java.nio.file.FileAlreadyExistsException e) {
        return false; // fired already, in this process or another
      } catch (java.io.IOException e) {
        throw new IllegalStateException(PROPERTY + ": cannot create " + once + ": " + e, e);
      }
    }
    fired++;
    return true;
  }

  private static Process stopper(long ms) {
    long pid = ProcessHandle.current().pid();
    try {
      return new ProcessBuilder("sh", "-c", "read go || exit 0; kill -STOP " + pid + "; sleep "
          + ms / 1000.0 + "; kill -CONT " + pid).redirectOutput(ProcessBuilder.Redirect.INHERIT)
          .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    } catch (java.io.IOException e) {
      throw new IllegalStateException("cannot start the stopper: " + e, e);
    }
  }

  /** SIGSTOP this process now; the waiting shell SIGCONTs it after {@code ms}. */
  private static void freeze(long ms) {
    long last = System.nanoTime(); // before the stop can come: its gap is measured from here
    try {
      STOPPER.getOutputStream().write('\n');
      STOPPER.getOutputStream().flush();
    } catch (java.io.IOException e) {
      throw new IllegalStateException("cannot freeze: " + e, e);
    }
    // return right after the resume, however late the stop came: look for the gap it leaves
    long until = last + TimeUnit.MILLISECONDS.toNanos(3 * ms);
    while (System.nanoTime() - until < 0) {
      sleep(5);
      long now = System.nanoTime();
      if (now - last > TimeUnit.MILLISECONDS.toNanos(ms / 2)) {
        return;
      }
      last = now;
    }
  }

  private static void sleep(long ms) {
    try {
      TimeUnit.MILLISECONDS.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
