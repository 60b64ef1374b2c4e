package io.treeline.examples.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine;

/**
 * Writes docs/cli.md from the commands' annotations: every command's help, as {@code --help}
 * prints it. {@code ./mvnw -q -Pdocs -pl examples -am process-classes} regenerates it; a test
 * fails when the committed file differs.
 */
public final class CliDocs {
  private CliDocs() {
  }

  /** docs/cli.md, generated. */
  public static String markdown() {
    PrintStream none = new PrintStream(OutputStream.nullOutputStream());
    CommandLine root = Treeline.commandLine(none, none);
    StringBuilder b = new StringBuilder();
    b.append("# The command line\n\n")
        .append("<!-- Generated from the picocli annotations of examples/src/main/java/io/"
            + "treeline/examples/cli by CliDocs: ./mvnw -q -Pdocs -pl examples -am "
            + "process-classes. Do not edit; a test fails when this file differs. -->\n\n")
        .append("`./treeline COMMAND [OPTIONS]` builds what it runs on first use. Every command "
            + "takes `--help` and `--version`.\n\n")
        .append("- Sizes take binary units: `8`, `64K`, `1M`, `4G` (also `64KiB`, `64KB`; "
            + "K = 1024).\n")
        .append("- Durations: `500ms`, `30s`, `2min` (or `2m`), `1h`; a plain number is "
            + "seconds; `7d` is seven days.\n")
        .append("- Every value is checked before anything runs. A usage mistake prints one line "
            + "naming the option, the command's synopsis and where the options are, and exits "
            + "with 2; a failure of the work itself exits with 1.\n")
        .append("- Shell completion: `source <(./treeline completion)` (bash and zsh).\n")
        .append("- `./treeline jmh` (the JMH benchmark of the host reducers) is started by the "
            + "launcher script and takes JMH's own options.\n");
    section(b, root);
    return b.toString();
  }

  private static void section(StringBuilder b, CommandLine c) {
    String name = c.getCommandSpec().qualifiedName();
    if (c.getCommandSpec().name().equals("help")) {
      return;
    }
    b.append("\n## ").append(name).append("\n\n```text\n")
        .append(c.getUsageMessage(CommandLine.Help.Ansi.OFF).stripTrailing()).append("\n```\n");
    for (CommandLine sub : c.getSubcommands().values()) {
      section(b, sub);
    }
  }

  /** Writes docs/cli.md under the given repository root (default: "."). */
  public static void main(String[] args) throws IOException {
    Path root = Path.of(args.length > 0 ? args[0] : ".");
    Path out = root.resolve("docs").resolve("cli.md");
    Files.writeString(out, markdown());
    System.out.println("wrote " + out);
  }
}
