package io.treeline.it;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Runs {@code org.apache.spark.deploy.SparkSubmit} as {@code bin/spark-submit} does: in a JVM of
 * its own (java from java.home, Spark's module flags), with Spark's jars alone on its classpath
 * (the test classpath minus every entry that holds a class the shaded jar holds: Treeline
 * reaches the job only through {@code --jars}), and a user application jar made from the test's
 * {@code io.treeline.it.app} package.
 */
final class SparkSubmitRunner {
  static final Path WORK = Path.of("target", "submit").toAbsolutePath();
  private static String sparkClasspath;
  private static Path appJar;

  private SparkSubmitRunner() {
  }

  /** What a run printed and how it ended. */
  record Result(int exitCode, String output, String commandLine, double seconds) {
    /** The application's TREELINE-RESULT line, or null. */
    String resultLine() {
      return output.lines().filter(l -> l.startsWith("TREELINE-RESULT")).findFirst()
          .orElse(null);
    }

    String tail(int lines) {
      List<String> all = output.lines().toList();
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }
  }

  /** spark-plugin/target/treeline-spark-VERSION.jar, built by that module's package phase. */
  static Path shadedJar() {
    Path jar = Path.of(System.getProperty("treeline.it.shadedJar")).toAbsolutePath().normalize();
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(jar + " is missing: it is built by the spark-plugin "
          + "module's package phase (./mvnw -pl spark-plugin -am package -DskipTests, or run "
          + "the tests with ./mvnw verify)");
    }
    return jar;
  }

  /** The test classpath without Treeline, its bundled dependencies, and test code. */
  static synchronized String sparkClasspath() throws IOException {
    if (sparkClasspath == null) {
      Set<String> shaded = new HashSet<>();
      try (JarFile j = new JarFile(shadedJar().toFile())) {
        j.stream().filter(e -> !e.isDirectory()).map(JarEntry::getName)
            .filter(n -> !n.startsWith("META-INF/")).forEach(shaded::add);
      }
      List<String> keep = new ArrayList<>();
      for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
        Path p = Path.of(e);
        if (Files.isDirectory(p) || !Files.isRegularFile(p)) {
          continue; // the modules' target/classes and test-classes
        }
        String name = p.getFileName().toString();
        if (name.startsWith("junit-") || name.startsWith("opentest4j")
            || name.startsWith("apiguardian") || name.startsWith("surefire")) {
          continue;
        }
        try (JarFile j = new JarFile(p.toFile())) {
          if (j.stream().noneMatch(x -> shaded.contains(x.getName())
              || x.getName().startsWith("io/treeline/"))) {
            keep.add(p.toAbsolutePath().toString());
          }
        }
      }
      sparkClasspath = String.join(File.pathSeparator, keep);
      Files.createDirectories(WORK);
      Files.writeString(WORK.resolve("spark-classpath.txt"), sparkClasspath); // to rerun by hand
    }
    return sparkClasspath;
  }

  /** A jar of the io.treeline.it.app classes, as a user's build would make. */
  static synchronized Path appJar() throws IOException {
    if (appJar == null) {
      Path classes = Path.of(io.treeline.it.app.TrainApp.class.getProtectionDomain()
          .getCodeSource().getLocation().getPath());
      Path pkg = classes.resolve("io/treeline/it/app");
      Files.createDirectories(WORK);
      Path jar = WORK.resolve("train-app.jar");
      Manifest mf = new Manifest();
      mf.getMainAttributes().putValue("Manifest-Version", "1.0");
      try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), mf);
          Stream<Path> s = Files.walk(pkg)) {
        for (Path f : s.filter(Files::isRegularFile).sorted().toList()) {
          out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
          Files.copy(f, out);
          out.closeEntry();
        }
      }
      appJar = jar;
    }
    return appJar;
  }

  /**
   * Runs SparkSubmit with {@code args} in {@code dir}; {@code jvmProps} are -D options of the
   * submitting JVM, {@code extraClasspath} goes first on its classpath (a Hadoop conf dir, as
   * bin/spark-class adds HADOOP_CONF_DIR), {@code env} is added to its environment.
   */
  static Result run(List<String> args, List<String> jvmProps, List<String> extraClasspath,
      Map<String, String> env, Path dir, Duration timeout) throws Exception {
    return run(args, jvmProps, extraClasspath, env, dir, timeout, null);
  }

  /**
   * As {@link #run(List, List, List, Map, Path, Duration)}; when {@code stopWhen} is not null,
   * the run is ended (its process tree killed, exit code -1) as soon as its output holds it.
   */
  static Result run(List<String> args, List<String> jvmProps, List<String> extraClasspath,
      Map<String, String> env, Path dir, Duration timeout, String stopWhen) throws Exception {
    Files.createDirectories(dir);
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(List.of(System.getProperty("treeline.it.sparkOpens").trim().split("\\s+")));
    // the submitting JVM is a small launcher (client mode: the driver): C1 and a serial GC
    // start it sooner on a 2-core machine
    cmd.addAll(List.of("-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
    cmd.add("-Djava.io.tmpdir=" + Files.createDirectories(dir.resolve("tmp")));
    cmd.addAll(jvmProps);
    List<String> cp = new ArrayList<>(extraClasspath);
    cp.add(sparkClasspath());
    cmd.add("-cp");
    cmd.add(String.join(File.pathSeparator, cp));
    cmd.add("org.apache.spark.deploy.SparkSubmit");
    cmd.addAll(args);
    String spark = sparkClasspath();
    String shown = "spark-submit " + args.stream()
        .map(a -> a.replace(spark, "$SPARK_JARS"))
        .map(a -> a.contains(" ") ? "'" + a + "'" : a).collect(Collectors.joining(" "));
    Path log = dir.resolve("spark-submit.log");
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile());
    pb.environment().putAll(env);
    long t0 = System.nanoTime();
    Process p = pb.start();
    try {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (stopWhen != null && p.isAlive() && System.nanoTime() < deadline) {
        if (read(log).contains(stopWhen)) {
          p.descendants().forEach(ProcessHandle::destroyForcibly);
          p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
          return new Result(-1, read(log), shown, (System.nanoTime() - t0) / 1e9);
        }
        Thread.sleep(250);
      }
      if (!p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        throw new AssertionError(shown + "\ndid not end within " + timeout + "; its output ends "
            + "with:\n" + new Result(-1, read(log), shown, 0).tail(60));
      }
    } finally {
      if (p.isAlive()) {
        p.destroyForcibly();
      }
    }
    return new Result(p.exitValue(), read(log), shown, (System.nanoTime() - t0) / 1e9);
  }

  static String read(Path f) {
    try {
      return Files.readString(f, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** key=value pairs of a TREELINE-RESULT line. */
  static Map<String, String> fields(String line) {
    return Stream.of(line.split(" ")).skip(1).map(kv -> kv.split("=", 2))
        .collect(Collectors.toMap(kv -> kv[0], kv -> kv.length > 1 ? kv[1] : ""));
  }
}
