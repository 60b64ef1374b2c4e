package io.treeline.plan;

/**
 * Splits {@code count} elements into {@code parts} contiguous slices as evenly as the alignment
 * allows: slice boundaries fall on multiples of {@code align} elements (so that a GPU can use
 * 16-byte loads on every slice), the last slice takes the remainder, and slices may be empty
 * when {@code count} is small.
 */
public final class Slices {
  private Slices() {
  }

  public static long lo(long count, int parts, int i, int align) {
    if (i >= parts) {
      return count;
    }
    long units = (count + align - 1) / align;
    return Math.min(count, units * i / parts * align);
  }

  public static long hi(long count, int parts, int i, int align) {
    return lo(count, parts, i + 1, align);
  }

  public static long size(long count, int parts, int i, int align) {
    return hi(count, parts, i, align) - lo(count, parts, i, align);
  }
}
