package io.treeline.plan;

/**
 * The two buffers every rank brings to a collective, both {@code count} elements long. A rank
 * only ever writes its own OUTPUT; INPUT is read-only for the whole collective, so peers may
 * read it in place.
 */
public enum Buf {
  INPUT, OUTPUT
}
