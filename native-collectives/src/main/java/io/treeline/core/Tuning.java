package io.treeline.core;

import java.util.Locale;

/**
 * Every JVM system property Treeline reads ({@code -Dtreeline.*}), declared once with its
 * default and meaning; docs/configuration.md lists them, generated from here. They are the
 * host path's tuning knobs: the defaults are the measured choices (docs/BENCHMARKS.md), and each
 * property is kept so that its effect can be measured again. Spark jobs set them through
 * {@code spark.executor.extraJavaOptions}; {@code ./treeline} through {@code TREELINE_JAVA_OPTS}.
 * They live in core, the bottom layer, because the reducers, the plan runner and the transports
 * read them and may not depend on the configuration layer above.
 */
public enum Tuning {
  /** The fewest elements a Vector API kernel reduces. */
  VECTOR_MIN_ELEMENTS("treeline.vectorMinElements", "256", "Below this many elements a reduce "
      + "runs the scalar loops instead of the Vector API kernels (a kernel first compiled from "
      + "calls shorter than a vector would deoptimise on the first long one). 0: the kernels for "
      + "every count."),
  /** Whether the first communicator of a JVM warms the Vector API kernels. */
  WARM_UP_KERNELS("treeline.warmUpKernels", "true", "The first communicator of a JVM runs the "
      + "Vector API kernels until C2 has compiled them, and its set-up waits up to 2 s for it, "
      + "so that no rank's first reduce of a kind runs them interpreted (17-46 ms first calls "
      + "across nodes on 16 cores). Only where the host's ranks leave cores to spare (2 x ranks "
      + "<= cores). Costs about 1 s of set-up once a JVM; false skips it."),
  /** Threads per rank for the reduce. */
  REDUCE_THREADS("treeline.reduceThreads", "auto", "Threads one rank reduces with, its own "
      + "included (1-8). auto: the machine's cores divided among the node's ranks."),
  /** The smallest part a helper thread reduces. */
  REDUCE_MIN_PART_BYTES("treeline.reduceMinPartBytes", "1048576", "Below this many bytes per "
      + "part a rank reduces alone: a hand-off to a helper thread costs a wake-up."),
  /** Two-shot's pipelining unit. */
  PEER_CHUNK_BYTES("treeline.peerChunkBytes", "0", "Two-shot's reduce-scatter and all-gather "
      + "pipelined in chunks of this many bytes per slice; 0, the default, runs whole phases "
      + "(pipelining measured no gain on 16 cores)."),
  /** Whether two-shot's all-gather writes the caller's output itself. */
  DIRECT_OUTPUT("treeline.directOutput", "auto", "Two-shot's all-gather writes a caller's "
      + "direct ByteBuffer output itself instead of copying the result out of shared memory. "
      + "auto: where the host's ranks fit its cores; true or false force it."),
  /** Whether a caller's input stands in for the registered input where peers do not read it. */
  DIRECT_INPUT("treeline.directInput", "auto", "A rank reads its own part of a caller's direct "
      + "ByteBuffer input in place and copies into shared memory only what its peers read "
      + "(two-shot: the other ranks' slices), instead of copying the whole input in. auto: "
      + "where the host's ranks fit its cores; true or false force it."),
  /** Whether a waiting rank thread reads its TCP socket itself. */
  TCP_POLL_READ("treeline.tcpPollRead", "auto", "A rank thread that waits for a small message "
      + "reads its socket itself instead of waiting for the receiver thread. auto: where every "
      + "rank of the host and its receiver thread can have a core; true or false force it."),
  /** The largest message a rank thread polls for. */
  TCP_POLL_MAX_BYTES("treeline.tcpPollMaxBytes", "65536", "The largest message whose wait "
      + "reads the socket on the rank thread (treeline.tcpPollRead)."),
  /** Whether small messages' credits ride with the next frame. */
  TCP_DEFER_CREDITS("treeline.tcpDeferCredits", "true", "The credit for a small received "
      + "message rides with the rank's next frame to that peer instead of going alone at once.");

  private final String key;
  private final String defaultValue;
  private final String doc;

  Tuning(String key, String defaultValue, String doc) {
    this.key = key;
    this.defaultValue = defaultValue;
    this.doc = doc;
  }

  /**
   * The property's name.
   *
   * @return the key, e.g. {@code treeline.vectorMinElements}
   */
  public String key() {
    return key;
  }

  /**
   * The value used when the JVM does not set the property.
   *
   * @return the default, as it would be written after {@code -Dkey=}
   */
  public String defaultValue() {
    return defaultValue;
  }

  /**
   * What the property does, as docs/configuration.md says it.
   *
   * @return one or more sentences
   */
  public String doc() {
    return doc;
  }

  /**
   * The value in this JVM.
   *
   * @return the property's value (trimmed) when set, else {@link #defaultValue()}
   */
  public String get() {
    String v = System.getProperty(key);
    return v == null || v.isBlank() ? defaultValue : v.trim();
  }

  /**
   * The value in this JVM as a whole number.
   *
   * @return {@link #get()} parsed
   * @throws IllegalArgumentException naming the property, when the value is not a number
   */
  public long getLong() {
    String v = get();
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("-D" + key + "=" + v + " is not a whole number "
          + "(default " + defaultValue + ")", e);
    }
  }

  /**
   * The value in this JVM as true or false.
   *
   * @return {@link #get()} parsed, case aside
   * @throws IllegalArgumentException naming the property, when it is neither
   */
  public boolean getBoolean() {
    String v = get().toLowerCase(Locale.ROOT);
    if (!v.equals("true") && !v.equals("false")) {
      throw new IllegalArgumentException("-D" + key + "=" + get() + " is neither true nor false "
          + "(default " + defaultValue + ")");
    }
    return v.equals("true");
  }

  /**
   * Appends the markdown table of docs/configuration.md's JVM properties section.
   *
   * @param b the document being written
   */
  public static void table(StringBuilder b) {
    b.append("| property | default | meaning |\n|---|---|---|\n");
    for (Tuning t : values()) {
      b.append("| `-D").append(t.key).append("` | `").append(t.defaultValue).append("` | ")
          .append(t.doc).append(" |\n");
    }
  }
}
