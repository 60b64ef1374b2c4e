package io.treeline.examples.cli;

import io.treeline.plan.Algorithm;
import java.util.Arrays;
import java.util.Iterator;

/** The allreduce algorithms' ids for picocli's help and completion, from {@link Algorithm}. */
final class AlgorithmIds implements Iterable<String> {
  @Override
  public Iterator<String> iterator() {
    return Arrays.stream(Algorithm.values()).map(Algorithm::id).iterator();
  }

  /** "auto" (the cost model's choice) and then every algorithm. */
  static final class WithAuto implements Iterable<String> {
    @Override
    public Iterator<String> iterator() {
      return java.util.stream.Stream.concat(java.util.stream.Stream.of("auto"),
          Arrays.stream(Algorithm.values()).map(Algorithm::id)).iterator();
    }
  }
}
