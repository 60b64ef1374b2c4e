package io.treeline.comm;

import java.util.HashMap;
import java.util.Map;

/**
 * A communicator's plans (or what it compiled from them) by call shape, the one cache both
 * communicators keep: host plans by kind, count, type and root; the GPU path's device programs
 * and staged plans by algorithm, count, type and op. Bounded: a job with ever-new sizes clears it
 * rather than grow without bound. Used from the collective thread only; a hit allocates nothing
 * (the caller's key aside).
 *
 * @param <V> what is cached per shape
 */
public final class PlanCache<V> {
  /** Shapes kept before the cache starts over. */
  public static final int MAX_SHAPES = 256;

  private final Map<String, V> byShape = new HashMap<>();

  /** The value cached for {@code key}, or null. */
  public V get(String key) {
    return byShape.get(key);
  }

  /** Caches {@code value} for {@code key} (clearing a full cache first) and returns it. */
  public V put(String key, V value) {
    if (byShape.size() > MAX_SHAPES) {
      byShape.clear(); // a job with ever-new sizes must not grow without bound
    }
    byShape.put(key, value);
    return value;
  }
}
