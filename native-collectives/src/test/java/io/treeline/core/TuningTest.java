package io.treeline.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class TuningTest {
  @Test
  void everyPropertyIsNamedOnceUnderTreelineAndItsDefaultParses() {
    Set<String> keys = new HashSet<>();
    for (Tuning t : Tuning.values()) {
      assertTrue(t.key().startsWith("treeline."), t.key());
      assertTrue(keys.add(t.key()), "declared twice: " + t.key());
      assertFalse(t.doc().isBlank(), t.key());
      String d = t.defaultValue();
      // each default is a number, a boolean, or auto (what the readers parse)
      assertTrue(d.matches("-?\\d+|true|false|auto"), t.key() + " default " + d);
    }
  }

  @Test
  void aBadValueFailsNamingTheProperty() {
    Tuning t = Tuning.TCP_POLL_MAX_BYTES;
    String before = System.getProperty(t.key());
    try {
      System.setProperty(t.key(), "64k");
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, t::getLong);
      assertTrue(e.getMessage().contains("-Dtreeline.tcpPollMaxBytes=64k"), e.getMessage());
      System.setProperty(t.key(), " 4096 ");
      assertEquals(4096, t.getLong());
      System.setProperty(Tuning.TCP_DEFER_CREDITS.key(), "yes");
      e = assertThrows(IllegalArgumentException.class, Tuning.TCP_DEFER_CREDITS::getBoolean);
      assertTrue(e.getMessage().contains("neither true nor false"), e.getMessage());
    } finally {
      restore(t.key(), before);
      System.clearProperty(Tuning.TCP_DEFER_CREDITS.key());
    }
    assertEquals(65536, t.getLong(), "unset: the default");
  }

  /**
   * Declared once: no main source of any module reads a {@code treeline.*} system property
   * except through {@link Tuning}, so docs/configuration.md lists every one.
   */
  @Test
  void noSourceReadsATreelinePropertyBehindTuningsBack() throws IOException {
    Pattern read = Pattern.compile("(System\\.getProperty|Long\\.getLong|Integer\\.getInteger"
        + "|Boolean\\.getBoolean)\\(\\s*\"(treeline\\.[^\"]*)\"");
    Path root = Path.of("").toAbsolutePath().getParent(); // the repository (tests run in a module)
    List<String> found = new ArrayList<>();
    try (Stream<Path> modules = Files.list(root)) {
      for (Path m : modules.toList()) {
        Path src = m.resolve("src/main/java");
        if (!Files.isDirectory(src)) {
          continue;
        }
        try (Stream<Path> files = Files.walk(src)) {
          for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
            Matcher x = read.matcher(Files.readString(f));
            while (x.find()) {
              found.add(root.relativize(f) + ": " + x.group(2));
            }
          }
        }
      }
    }
    assertEquals(List.of(), found, "declare these in io.treeline.core.Tuning");
  }

  private static void restore(String key, String value) {
    if (value == null) {
      System.clearProperty(key);
    } else {
      System.setProperty(key, value);
    }
  }
}
