package io.treeline.reduce;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import java.nio.ByteBuffer;

/**
 * The two- and one-input forms of {@link Reducer#reduce} without allocating: the buffers go
 * through arrays the instance owns (a reducer is single-threaded anyway).
 */
abstract class ArrayForms implements Reducer {
  /** Two-input form: {@code dst = a op b}, the shape of every receive-and-reduce step. */
  @Override
  public final void reduce2(DataType type, ReduceOp op, ByteBuffer a, long aOffset,
      ByteBuffer b, long bOffset, ByteBuffer dst, long dstOffset, long count, boolean finish,
      int divisor) {
    pair[0] = a;
    pair[1] = b;
    pairOffsets[0] = aOffset;
    pairOffsets[1] = bOffset;
    try {
      reduce(type, op, pair, pairOffsets, 2, dst, dstOffset, count, finish, divisor);
    } finally {
      pair[0] = null;
      pair[1] = null;
    }
  }

  /** {@code dst = src}, or {@code dst = src / divisor} when it finishes an AVG. */
  @Override
  public final void copy(DataType type, ReduceOp op, ByteBuffer src, long srcOffset,
      ByteBuffer dst, long dstOffset, long count, boolean finish, int divisor) {
    one[0] = src;
    oneOffset[0] = srcOffset;
    try {
      reduce(type, op, one, oneOffset, 1, dst, dstOffset, count, finish, divisor);
    } finally {
      one[0] = null;
    }
  }

  private final ByteBuffer[] pair = new ByteBuffer[2];
  private final long[] pairOffsets = new long[2];
  private final ByteBuffer[] one = new ByteBuffer[1];
  private final long[] oneOffset = new long[1];
}
