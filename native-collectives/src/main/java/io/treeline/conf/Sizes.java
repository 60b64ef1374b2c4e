package io.treeline.conf;

import java.time.Duration;
import java.util.Locale;

/** Parsing and printing of the size and duration values Spark users write. */
final class Sizes {
  private Sizes() {
  }

  /** "512k", "25m", "1g", "4096", "64kb" (binary multiples, as Spark's byte strings). */
  static long bytes(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    if (t.endsWith("b") && t.length() > 1 && !Character.isDigit(t.charAt(t.length() - 2))) {
      t = t.substring(0, t.length() - 1);
    } else if (t.endsWith("b")) {
      t = t.substring(0, t.length() - 1);
    }
    int shift = 0;
    char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
    switch (last) {
      case 'k' -> shift = 10;
      case 'm' -> shift = 20;
      case 'g' -> shift = 30;
      case 't' -> shift = 40;
      default -> shift = 0;
    }
    if (shift > 0) {
      t = t.substring(0, t.length() - 1);
    }
    long v = Long.parseLong(t.trim());
    if (v < 0) {
      throw new IllegalArgumentException("negative size");
    }
    return v << shift;
  }

  static String bytesText(long b) {
    String[] u = {"b", "k", "m", "g", "t"};
    int i = 0;
    while (i < u.length - 1 && b % 1024 == 0 && b >= 1024) {
      b /= 1024;
      i++;
    }
    return b + u[i];
  }

  /** "60s", "500ms", "2min", "1h", or plain seconds. */
  static Duration duration(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    if (t.endsWith("ms")) {
      return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2).trim()));
    }
    if (t.endsWith("min")) {
      return Duration.ofMinutes(Long.parseLong(t.substring(0, t.length() - 3).trim()));
    }
    if (t.endsWith("h")) {
      return Duration.ofHours(Long.parseLong(t.substring(0, t.length() - 1).trim()));
    }
    if (t.endsWith("s")) {
      return Duration.ofSeconds(Long.parseLong(t.substring(0, t.length() - 1).trim()));
    }
    return Duration.ofSeconds(Long.parseLong(t));
  }

  static String durationText(Duration d) {
    long ms = d.toMillis();
    if (ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0 && ms >= 600_000) {
      return ms / 60_000 + "min";
    }
    return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
  }
}
