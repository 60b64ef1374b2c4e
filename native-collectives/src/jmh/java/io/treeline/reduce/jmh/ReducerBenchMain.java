package io.treeline.reduce.jmh;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * {@code ./treeline jmh}: runs {@link ReducerBenchmark} and turns JMH's ops/s into memory
 * bandwidth, next to memcpy's of the same run. Reduce bandwidth counts every byte read and
 * written, (inputs + 1) x size, as memcpy's counts 2 x size; the ratio column is the reducer's
 * bandwidth over memcpy's. Extra arguments go to JMH (e.g. {@code -p bytes=1048576 -f 1}).
 */
public final class ReducerBenchMain {
  private ReducerBenchMain() {
  }

  public static void main(String[] args) throws RunnerException, CommandLineOptionException {
    CommandLineOptions cli = new CommandLineOptions(args);
    // Defaults for a 2-core machine; anything given on the command line wins.
    OptionsBuilder b = new OptionsBuilder();
    b.parent(cli);
    if (cli.getIncludes().isEmpty()) {
      b.include(ReducerBenchmark.class.getName()).include(CopyBenchmark.class.getName());
    }
    if (!cli.getForkCount().hasValue()) {
      b.forks(1);
    }
    if (!cli.getWarmupIterations().hasValue()) {
      b.warmupIterations(2);
    }
    if (!cli.getWarmupTime().hasValue()) {
      b.warmupTime(TimeValue.seconds(1));
    }
    if (!cli.getMeasurementIterations().hasValue()) {
      b.measurementIterations(5);
    }
    if (!cli.getMeasurementTime().hasValue()) {
      b.measurementTime(TimeValue.seconds(1));
    }
    Options opts = b.jvmArgsAppend("-Xmx2g", "--add-modules=jdk.incubator.vector").build();
    Collection<RunResult> results = new Runner(opts).run();
    List<String[]> memcpy = new ArrayList<>();
    System.out.println();
    System.out.println("# host reducers vs memcpy, same run (GB/s of bytes read + written)");
    System.out.printf("# %-10s %-7s %-6s %-7s %-10s %12s %10s %12s %8s%n", "benchmark", "impl",
        "dtype", "inputs", "size", "ops/s", "GB/s", "memcpy GB/s", "ratio");
    for (RunResult r : results) {
      String name = r.getParams().getBenchmark();
      if (!name.endsWith(".memcpy")) {
        continue;
      }
      int bytes = Integer.parseInt(r.getParams().getParam("bytes"));
      double bw = r.getPrimaryResult().getScore() * 2.0 * bytes / 1e9;
      memcpy.add(new String[] {Integer.toString(bytes), Double.toString(bw)});
    }
    for (RunResult r : results) {
      String name = r.getParams().getBenchmark();
      String method = name.substring(name.lastIndexOf('.') + 1);
      int bytes = Integer.parseInt(r.getParams().getParam("bytes"));
      String in = r.getParams().getParam("inputs");
      int inputs = in == null ? 1 : Integer.parseInt(in);
      double ops = r.getPrimaryResult().getScore();
      double moved = method.equals("reduce") ? (inputs + 1.0) * bytes : 2.0 * bytes;
      double bw = ops * moved / 1e9;
      double base = Double.NaN;
      for (String[] m : memcpy) {
        if (Integer.parseInt(m[0]) == bytes) {
          base = Math.max(Double.isNaN(base) ? 0 : base, Double.parseDouble(m[1]));
        }
      }
      String impl = r.getParams().getParam("impl");
      System.out.printf(Locale.ROOT, "  %-10s %-7s %-6s %-7s %-10s %12.1f %10.2f %12.2f %8.2f%n",
          method, impl == null ? "-" : impl,
          method.equals("reduce") ? r.getParams().getParam("dtype") : "-",
          method.equals("reduce") ? inputs : "-", size(bytes), ops, bw, base, bw / base);
    }
  }

  private static String size(int bytes) {
    return bytes >= 1 << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
  }
}
