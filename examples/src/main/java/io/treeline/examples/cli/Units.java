package io.treeline.examples.cli;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Algorithm;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;

/**
 * The command line's value types: sizes with binary units, durations, the engine's enums, and
 * the range checks every command runs before it starts anything. A bad value is a
 * {@link ParameterException}: one line naming the option, then the usage, exit code 2.
 */
final class Units {
  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)(i?b)?");
  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|min|h|d)?");

  private Units() {
  }

  /** "8", "64K", "1M", "4G", "512KiB", "1MB": binary multiples, as nccl-tests reads them. */
  static long bytes(String s) {
    Matcher m = SIZE.matcher(s.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new TypeConversionException("'" + s + "' is not a size like 8, 64K, 1M or 4G");
    }
    int shift = switch (m.group(2)) {
      case "k" -> 10;
      case "m" -> 20;
      case "g" -> 30;
      case "t" -> 40;
      default -> 0;
    };
    try {
      long v = Long.parseLong(m.group(1));
      if (v > Long.MAX_VALUE >> shift) {
        throw new NumberFormatException();
      }
      return v << shift;
    } catch (NumberFormatException e) {
      throw new TypeConversionException("'" + s + "' is too large a size");
    }
  }

  /** 1024 -> "1K", 3 << 20 -> "3M", 1000 -> "1000". */
  static String bytesText(long b) {
    String[] u = {"", "K", "M", "G", "T"};
    int i = 0;
    while (i < u.length - 1 && b >= 1024 && b % 1024 == 0) {
      b /= 1024;
      i++;
    }
    return b + u[i];
  }

  /** "30s", "500ms", "2m" or "2min", "1h"; a plain number is seconds (as the options were). */
  static Duration duration(String s) {
    Matcher m = DURATION.matcher(s.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new TypeConversionException("'" + s + "' is not a duration like 30s, 500ms, 2min "
          + "or 1h");
    }
    long v;
    try {
      v = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      throw new TypeConversionException("'" + s + "' is too long a duration");
    }
    String unit = m.group(2) == null ? "s" : m.group(2);
    if (v > 365L * 24 * 3600 * 1000) {
      throw new TypeConversionException("'" + s + "' is too long a duration");
    }
    return switch (unit) {
      case "ms" -> Duration.ofMillis(v);
      case "m", "min" -> Duration.ofMinutes(v);
      case "h" -> Duration.ofHours(v);
      case "d" -> Duration.ofDays(v);
      default -> Duration.ofSeconds(v);
    };
  }

  static final class Size implements ITypeConverter<Long> {
    @Override
    public Long convert(String s) {
      return bytes(s);
    }
  }

  static final class Time implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String s) {
      return duration(s);
    }
  }

  /** A finite decimal number: NaN and the infinities are refused here, ranges by the command. */
  static final class Finite implements ITypeConverter<Double> {
    @Override
    public Double convert(String s) {
      double v;
      try {
        v = Double.parseDouble(s.trim());
      } catch (NumberFormatException e) {
        throw new TypeConversionException("'" + s + "' is not a number");
      }
      if (!Double.isFinite(v)) {
        throw new TypeConversionException("'" + s + "' is not a finite number");
      }
      return v;
    }
  }

  /** Registers the engine's types on a command line (and the subcommands added before). */
  static void register(CommandLine cl) {
    cl.registerConverter(DataType.class, s -> parse(() -> DataType.parse(s)));
    cl.registerConverter(ReduceOp.class, s -> parse(() -> ReduceOp.parse(s)));
    cl.registerConverter(Algorithm.class, s -> parse(() -> Algorithm.parse(s)));
    cl.registerConverter(Duration.class, Units::duration);
  }

  private static <T> T parse(java.util.function.Supplier<T> p) {
    try {
      return p.get();
    } catch (IllegalArgumentException e) {
      throw new TypeConversionException(e.getMessage());
    }
  }

  /** {@code v} within [lo, hi], else a usage error naming the option and the range. */
  static long range(CommandSpec spec, String option, long v, long lo, long hi) {
    if (v < lo || v > hi) {
      throw usage(spec, option + " must be " + (hi == Long.MAX_VALUE || hi == Integer.MAX_VALUE
          ? "at least " + lo
          : "between " + lo + " and " + hi) + ", not " + v);
    }
    return v;
  }

  static int range(CommandSpec spec, String option, int v, int lo, int hi) {
    return (int) range(spec, option, (long) v, lo, hi);
  }

  /** A size within [lo, hi] bytes; the error names the bound with its unit, and why. */
  static long sizeRange(CommandSpec spec, String option, long v, long lo, long hi,
      String why) {
    if (v < lo) {
      throw usage(spec, option + " " + bytesText(v) + " is too small: " + why + " (at least "
          + bytesText(lo) + ")");
    }
    if (v > hi) {
      throw usage(spec, option + " " + bytesText(v) + " is too large: " + why + " ("
          + (Long.bitCount(hi + 1) == 1 ? "below " + bytesText(hi + 1) : "at most "
              + bytesText(hi)) + ")");
    }
    return v;
  }

  static double range(CommandSpec spec, String option, double v, double lo, double hi,
      boolean loOpen) {
    if (!(loOpen ? v > lo : v >= lo) || !(v <= hi)) {
      throw usage(spec, option + " must be " + (loOpen ? "above " : "at least ") + lo
          + (hi == Double.MAX_VALUE ? "" : " and at most " + hi) + ", not " + v);
    }
    return v;
  }

  /** A comma list of whole numbers, each in [lo, hi]: "3,1,2". */
  static int[] intList(CommandSpec spec, String option, String s, int lo, int hi) {
    String[] parts = s.split(",", -1);
    int[] v = new int[parts.length];
    for (int i = 0; i < parts.length; i++) {
      try {
        v[i] = Integer.parseInt(parts[i].trim());
      } catch (NumberFormatException e) {
        throw usage(spec, option + " takes whole numbers separated by commas, not '" + s
            + "'");
      }
      range(spec, option, v[i], lo, hi);
    }
    return v;
  }

  static Duration durationRange(CommandSpec spec, String option, Duration d, Duration lo,
      Duration hi) {
    if (d.compareTo(lo) < 0 || d.compareTo(hi) > 0) {
      throw usage(spec, option + " must be between " + text(lo) + " and " + text(hi) + ", not "
          + text(d));
    }
    return d;
  }

  static String text(Duration d) {
    long ms = d.toMillis();
    return ms == 0 ? "0s" : ms % 86_400_000 == 0 ? ms / 86_400_000 + "d"
        : ms % 3_600_000 == 0 ? ms / 3_600_000 + "h" : ms % 60_000 == 0 && ms >= 600_000
        ? ms / 60_000 + "min" : ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
  }

  /** Each name is "auto" or an algorithm that runs on the topology. */
  static void algorithms(CommandSpec spec, String option, List<String> names,
      List<String> allowed) {
    for (String n : names) {
      if (!allowed.contains(n.trim().toLowerCase(Locale.ROOT))) {
        throw usage(spec, option + " takes a comma list of " + String.join(", ", allowed)
            + "; '" + n + "' is none of them");
      }
    }
  }

  static ParameterException usage(CommandSpec spec, String message) {
    return new ParameterException(spec.commandLine(), message);
  }
}
