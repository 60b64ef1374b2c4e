package io.treeline.plan.verify;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * A map from the elements {@code [0, length)} to values, stored as maximal runs that the
 * updates have not yet split. A value of {@code null} means "nothing written yet".
 */
final class Segments<T> {
  /** A run {@code [lo, hi)} holding {@code value}. */
  record Run<T>(long lo, long hi, T value) {
  }

  private final NavigableMap<Long, Run<T>> runs = new TreeMap<>();
  private final long length;

  Segments(long length, T initial) {
    this.length = length;
    if (length > 0) {
      runs.put(0L, new Run<>(0, length, initial));
    }
  }

  long length() {
    return length;
  }

  /** The runs covering {@code [lo, hi)}, cut at lo and hi. */
  List<Run<T>> get(long lo, long hi) {
    check(lo, hi);
    List<Run<T>> out = new ArrayList<>();
    if (lo == hi) {
      return out;
    }
    Map.Entry<Long, Run<T>> first = runs.floorEntry(lo);
    for (Run<T> r : runs.subMap(first.getKey(), true, hi, false).values()) {
      out.add(new Run<>(Math.max(lo, r.lo), Math.min(hi, r.hi), r.value));
    }
    return out;
  }

  /** Replace {@code [lo, hi)} by the given runs, which must tile it exactly. */
  void put(List<Run<T>> tiles) {
    for (Run<T> t : tiles) {
      put(t.lo, t.hi, t.value);
    }
  }

  void put(long lo, long hi, T value) {
    check(lo, hi);
    if (lo == hi) {
      return;
    }
    split(lo);
    split(hi);
    runs.subMap(lo, true, hi, false).clear();
    runs.put(lo, new Run<>(lo, hi, value));
  }

  /** Apply {@code fn} to every run inside {@code [lo, hi)}, cutting at lo and hi. */
  void update(long lo, long hi, Function<T, T> fn) {
    List<Run<T>> parts = get(lo, hi);
    for (Run<T> r : parts) {
      put(r.lo, r.hi, fn.apply(r.value));
    }
  }

  List<Run<T>> all() {
    return get(0, length);
  }

  private void split(long at) {
    if (at <= 0 || at >= length) {
      return;
    }
    Map.Entry<Long, Run<T>> e = runs.floorEntry(at);
    Run<T> r = e.getValue();
    if (r.lo == at) {
      return;
    }
    runs.put(r.lo, new Run<>(r.lo, at, r.value));
    runs.put(at, new Run<>(at, r.hi, r.value));
  }

  private void check(long lo, long hi) {
    if (lo < 0 || hi > length || lo > hi) {
      throw new IndexOutOfBoundsException("region [" + lo + ", " + hi
          + ") outside a buffer of " + length + " elements");
    }
  }
}
