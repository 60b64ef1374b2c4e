package io.treeline.examples.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code ./treeline} command line: one entry point, a subcommand per tool (picocli). Usage
 * mistakes print one line that names the option, the command's synopsis, and exit with 2;
 * failures of the work itself exit with 1.
 */
@Command(name = "./treeline", mixinStandardHelpOptions = true,
    versionProvider = Treeline.Version.class, synopsisSubcommandLabel = "COMMAND",
    header = "Treeline: a hierarchical allreduce for Spark, and its tools",
    description = "Treeline's tools: the training job, the allreduce benchmark, ranks as JVMs on "
        + "simulated nodes, plans and the topology report.",
    footer = {"", "./treeline jmh runs the JMH benchmark of the host reducers against memcpy "
        + "(the launcher script builds and starts it).",
        "./treeline COMMAND --help shows a command's options; docs/cli.md lists them all."})
public final class Treeline implements Callable<Integer> {
  /** Every help text is laid out for this width, so that docs/cli.md is the same everywhere. */
  static final int WIDTH = 100;

  @Spec
  CommandSpec spec;

  private Treeline() {
  }

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getOut());
    return 2; // no command: as before, the usage and a usage error's code
  }

  public static void main(String[] argv) {
    System.exit(run(argv, System.out, System.err));
  }

  /** The command tree, printing to {@code out} and {@code err}. */
  static CommandLine commandLine(PrintStream out, PrintStream err) {
    CommandLine cl = new CommandLine(new Treeline());
    cl.addSubcommand(new TrainCommand(out));
    CommandLine bench = new CommandLine(new BenchCommand(out));
    bench.addSubcommand(new DeviceBenchCommand(out));
    cl.addSubcommand(bench);
    CommandLine run = new CommandLine(new RunCommand(out));
    run.setStopAtPositional(true); // run's own options end at the command it starts
    cl.addSubcommand(run);
    cl.addSubcommand(new PlanCommand(out));
    cl.addSubcommand(new TopoCommand(out));
    cl.addSubcommand(new CommandLine.HelpCommand());
    CommandLine completion = new CommandLine(new AutoComplete.GenerateCompletion());
    completion.getCommandSpec().name("completion").usageMessage().hidden(false);
    cl.addSubcommand("completion", completion);
    layout(cl);
    Units.register(cl);
    cl.setUsageHelpWidth(WIDTH);
    cl.setUsageHelpLongOptionsMaxWidth(30);
    cl.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
    cl.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
    cl.setParameterExceptionHandler(Treeline::usageError);
    cl.setExecutionExceptionHandler((e, c, parsed) -> failure(e, c));
    return cl;
  }

  /** The same headings and a short synopsis on every command's help. */
  private static void layout(CommandLine c) {
    c.getCommandSpec().usageMessage().abbreviateSynopsis(true).descriptionHeading("%n")
        .optionListHeading("%nOptions:%n").commandListHeading("%nCommands:%n")
        .parameterListHeading("%nArguments:%n");
    for (CommandLine sub : c.getSubcommands().values()) {
      layout(sub);
    }
  }

  static int run(String[] argv, PrintStream out, PrintStream err) {
    return commandLine(out, err).execute(deviceAsSubcommand(argv));
  }

  /** {@code bench --device ...} (as the README has it) is {@code bench device ...}. */
  static String[] deviceAsSubcommand(String[] argv) {
    if (argv.length == 0 || !argv[0].equals("bench")) {
      return argv;
    }
    List<String> a = new ArrayList<>(Arrays.asList(argv));
    int end = a.indexOf("--");
    int at = a.subList(0, end < 0 ? a.size() : end).indexOf("--device");
    if (at < 0) {
      return argv;
    }
    a.remove(at);
    a.add(1, "device");
    return a.toArray(new String[0]);
  }

  /** One line naming what is wrong, the command's synopsis, where the options are: exit 2. */
  private static int usageError(ParameterException e, String[] args) {
    CommandLine c = e.getCommandLine();
    PrintWriter w = c.getErr();
    w.println(name(c) + ": " + e.getMessage().replace('\n', ' ').trim());
    UnmatchedArgumentException.printSuggestions(e, w);
    w.print(c.getHelp().fullSynopsis());
    w.println(c.getCommandSpec().qualifiedName() + " --help lists the options.");
    w.flush();
    return 2;
  }

  private static int failure(Exception e, CommandLine c) {
    PrintWriter w = c.getErr();
    if (e instanceof IllegalArgumentException) {
      // a value the command could only check once it ran (a plan that does not fit)
      w.println(name(c) + ": " + e.getMessage());
      w.println("(" + c.getCommandSpec().qualifiedName() + " --help lists the options)");
      w.flush();
      return 2;
    }
    if (e instanceof IOException || e instanceof IllegalStateException) {
      w.println(name(c) + ": " + e.getMessage());
    } else {
      w.println(name(c) + " failed: " + e);
    }
    w.flush();
    return 1;
  }

  /** "treeline bench" for "./treeline bench". */
  private static String name(CommandLine c) {
    return c.getCommandSpec().qualifiedName().replaceFirst("^\\./", "");
  }

  /** The project's version (filtered into a resource by the build), Java and the OS. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() throws IOException {
      Properties p = new Properties();
      try (InputStream in = Treeline.class.getResourceAsStream("version.properties")) {
        if (in != null) {
          p.load(in);
        }
      }
      return new String[] {"treeline " + p.getProperty("version", "(unknown version)"),
          "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name")
              + "), " + System.getProperty("os.name") + " " + System.getProperty("os.arch")};
    }
  }
}
