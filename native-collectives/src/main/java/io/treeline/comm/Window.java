package io.treeline.comm;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A region of this rank's registered memory (the shared segment's INPUT and OUTPUT, at the same
 * offset in both), reserved with {@link HostCommunicator#reserveWindow}: the caller writes its data
 * into {@link #input()}, {@link HostCommunicator#allReduceAsync(Window, long,
 * io.treeline.core.DataType, io.treeline.core.ReduceOp)} reduces it in place, and the result is
 * read from {@link #output()}, with no copy into or out of the segment. Windows are reserved
 * from the top of the segment down; ordinary calls use the rest.
 *
 * <pre>
 *  0                         ordinary       top - w1 - w2     top - w1       top = segmentBytes
 *  +-------------------------------------+----------------+--------------+
 *  | ordinary calls (windowed by this)   | window 2       | window 1     |   INPUT and OUTPUT
 *  +-------------------------------------+----------------+--------------+
 * </pre>
 *
 * Every rank must reserve the same windows in the same order (local ranks then agree on the
 * offset, which the plan runner requires). Do not write {@link #input()} while a collective on
 * the window is in flight, nor read {@link #output()} before it completed.
 */
public final class Window {
  private final HostCommunicator owner;
  private final long base;
  private final long bytes;
  private final ByteBuffer input;
  private final ByteBuffer output;

  Window(HostCommunicator owner, long base, long bytes, ByteBuffer ownInput, ByteBuffer ownOutput) {
    this.owner = owner;
    this.base = base;
    this.bytes = bytes;
    this.input = ownInput.slice((int) base, (int) bytes).order(ByteOrder.nativeOrder());
    this.output = ownOutput.slice((int) base, (int) bytes).order(ByteOrder.nativeOrder());
  }

  /** This rank's data goes here (native order, {@link #bytes()} long). */
  public ByteBuffer input() {
    return input;
  }

  /** The result of a collective on the window (native order, {@link #bytes()} long). */
  public ByteBuffer output() {
    return output;
  }

  public long bytes() {
    return bytes;
  }

  /** Byte offset of the window in the segment's INPUT and OUTPUT. */
  public long base() {
    return base;
  }

  HostCommunicator owner() {
    return owner;
  }
}
