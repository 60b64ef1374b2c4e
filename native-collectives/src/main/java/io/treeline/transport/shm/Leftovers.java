package io.treeline.transport.shm;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Segment files that outlive their owner. A segment file is deleted once every local peer has
 * mapped it, but a rank killed during set-up never gets there. So files are named
 * {@code treeline-<job>-r<rank>-p<pid>}: {@link #sweep} deletes those whose owner process is
 * gone (any rank's set-up does, and the launcher after its ranks end), and a shutdown hook
 * deletes this process's files not yet unlinked when it is stopped by a signal (SIGTERM, ^C).
 */
public final class Leftovers {
  public static final String PREFIX = "treeline-";
  public static final String PID_MARK = "-p";
  private static final System.Logger LOG = System.getLogger("io.treeline.shm");
  private static final Set<Path> OWNED = ConcurrentHashMap.newKeySet();
  private static volatile boolean hooked;

  private Leftovers() {
  }

  /** The owner pid a segment file's name carries, or -1 for a name that is not a segment's. */
  static long ownerPid(String name) {
    int at = name.lastIndexOf(PID_MARK);
    if (!name.startsWith(PREFIX) || at < 0) {
      return -1;
    }
    try {
      return Long.parseLong(name.substring(at + PID_MARK.length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** Deletes the segment files in {@code dir} whose owner process has exited; returns how many. */
  public static int sweep(Path dir) {
    int deleted = 0;
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + "*")) {
      for (Path f : files) {
        long pid = ownerPid(f.getFileName().toString());
        if (pid > 0 && ProcessHandle.of(pid).map(h -> !h.isAlive()).orElse(true)) {
          try {
            if (Files.deleteIfExists(f)) {
              deleted++;
              LOG.log(System.Logger.Level.INFO, "deleted " + f + ": its owner (pid " + pid
                  + ") died during set-up");
            }
          } catch (IOException e) {
            // another user's file, or gone already
          }
        }
      }
    } catch (IOException e) {
      // no such folder, or not ours to list: nothing to sweep
    }
    return deleted;
  }

  static void own(Path file) {
    if (!hooked) {
      synchronized (Leftovers.class) {
        if (!hooked) {
          Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Path p : OWNED) {
              try {
                Files.deleteIfExists(p);
              } catch (IOException e) {
                // exiting anyway
              }
            }
          }, "treeline-shm-cleanup"));
          hooked = true;
        }
      }
    }
    OWNED.add(file);
  }

  static void unlinked(Path file) {
    OWNED.remove(file);
  }
}
