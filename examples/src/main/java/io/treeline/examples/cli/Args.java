package io.treeline.examples.cli;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A small GNU-style option parser: {@code --name value}, {@code --name=value}, and flags. Each
 * command declares its options with a help line; unknown options are an error that lists the
 * known ones.
 */
final class Args {
  private record Option(String name, String arg, String help, String dflt) {
  }

  private final String command;
  private final String summary;
  private final Map<String, Option> options = new LinkedHashMap<>();
  private final Map<String, String> values = new LinkedHashMap<>();
  private final List<String> positional = new ArrayList<>();
  private final Map<String, String> aliases = new LinkedHashMap<>();

  Args(String command, String summary) {
    this.command = command;
    this.summary = summary;
    flag("help", "print this help");
  }

  Args option(String name, String arg, String dflt, String help) {
    options.put(name, new Option(name, arg, help, dflt));
    return this;
  }

  Args flag(String name, String help) {
    options.put(name, new Option(name, null, help, null));
    return this;
  }

  /** {@code -short} means {@code --name} (nccl-tests' one-letter options). */
  Args alias(String shortName, String name) {
    aliases.put(shortName, name);
    return this;
  }

  /** Parses; returns false when --help was given (the help is then printed). */
  boolean parse(String[] argv) {
    for (int i = 0; i < argv.length; i++) {
      String a = argv[i];
      if (a.length() == 2 && a.charAt(0) == '-' && aliases.containsKey(a.substring(1))) {
        a = "--" + aliases.get(a.substring(1));
      }
      if (!a.startsWith("--")) {
        positional.add(a);
        continue;
      }
      String name = a.substring(2);
      String value = null;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      }
      Option o = options.get(name);
      if (o == null) {
        throw new UsageException("unknown option --" + name + " for '" + command
            + "'; known: " + String.join(", ", options.keySet().stream().map(k -> "--" + k)
            .toList()));
      }
      if (o.arg == null) {
        values.put(name, "true");
      } else {
        if (value == null) {
          if (i + 1 >= argv.length) {
            throw new UsageException("--" + name + " needs a value (" + o.arg + ")");
          }
          value = argv[++i];
        }
        values.put(name, value);
      }
    }
    if (has("help")) {
      System.out.print(help());
      return false;
    }
    return true;
  }

  boolean has(String name) {
    return values.containsKey(name);
  }

  String get(String name) {
    String v = values.get(name);
    if (v != null) {
      return v;
    }
    Option o = options.get(name);
    return o == null ? null : o.dflt;
  }

  int getInt(String name) {
    String v = get(name);
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new UsageException("--" + name + " takes a whole number, not '" + v + "'");
    }
  }

  long getBytes(String name) {
    return parseBytes(get(name), name);
  }

  List<String> positional() {
    return positional;
  }

  String help() {
    StringBuilder b = new StringBuilder();
    b.append("usage: ./treeline ").append(command).append(" [options]\n\n").append(summary)
        .append("\n\noptions:\n");
    for (Option o : options.values()) {
      String left = "  --" + o.name + (o.arg != null ? " " + o.arg : "");
      b.append(String.format("%-28s %s%s%n", left, o.help,
          o.dflt != null ? " (default: " + o.dflt + ")" : ""));
    }
    return b.toString();
  }

  /** "8", "64K", "1M", "4G", "512KiB", "1MB" (binary multiples, as nccl-tests uses). */
  static long parseBytes(String s, String what) {
    String t = s.trim().toUpperCase(Locale.ROOT).replace("IB", "").replace("B", "");
    long mult = 1;
    if (!t.isEmpty()) {
      char last = t.charAt(t.length() - 1);
      int shift = switch (last) {
        case 'K' -> 10;
        case 'M' -> 20;
        case 'G' -> 30;
        case 'T' -> 40;
        default -> 0;
      };
      if (shift > 0) {
        mult = 1L << shift;
        t = t.substring(0, t.length() - 1);
      }
    }
    try {
      long v = Long.parseLong(t.trim()) * mult;
      if (v < 0) {
        throw new NumberFormatException();
      }
      return v;
    } catch (NumberFormatException e) {
      throw new UsageException("--" + what + " takes a size like 8, 64K, 1M or 4G, not '" + s
          + "'");
    }
  }

  /** A mistake in the command line: printed with the command's help, exit code 2. */
  static final class UsageException extends RuntimeException {
    UsageException(String message) {
      super(message);
    }
  }
}
