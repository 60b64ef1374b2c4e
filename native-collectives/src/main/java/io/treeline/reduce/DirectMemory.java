package io.treeline.reduce;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import sun.misc.Unsafe;

/**
 * Bulk copies between direct buffers and Java arrays, the way Agrona's UnsafeBuffer does them:
 * one bounds check per call, then a plain memcpy. Only native-order direct buffers are accepted,
 * so an element's bytes are the same in the buffer and in the array.
 */
final class DirectMemory {
  static final Unsafe UNSAFE;
  private static final long ADDRESS_OFFSET;
  static final long BYTE_BASE;
  static final long SHORT_BASE;
  static final long INT_BASE;
  static final long LONG_BASE;
  static final long FLOAT_BASE;
  static final long DOUBLE_BASE;

  static {
    try {
      Field f = Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      UNSAFE = (Unsafe) f.get(null);
      ADDRESS_OFFSET = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("address"));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
    BYTE_BASE = UNSAFE.arrayBaseOffset(byte[].class);
    SHORT_BASE = UNSAFE.arrayBaseOffset(short[].class);
    INT_BASE = UNSAFE.arrayBaseOffset(int[].class);
    LONG_BASE = UNSAFE.arrayBaseOffset(long[].class);
    FLOAT_BASE = UNSAFE.arrayBaseOffset(float[].class);
    DOUBLE_BASE = UNSAFE.arrayBaseOffset(double[].class);
  }

  private DirectMemory() {
  }

  /** Address of byte {@code offset} of {@code buf}, after checking {@code bytes} fit. */
  static long address(ByteBuffer buf, long offset, long bytes) {
    if (!buf.isDirect()) {
      throw new IllegalArgumentException("reducers work on direct (off-heap) buffers only");
    }
    if (offset < 0 || bytes < 0 || offset + bytes > buf.capacity()) {
      throw new IndexOutOfBoundsException("bytes [" + offset + ", " + (offset + bytes)
          + ") outside a buffer of " + buf.capacity() + " bytes");
    }
    return UNSAFE.getLong(buf, ADDRESS_OFFSET) + offset;
  }

  static void checkOrder(ByteBuffer buf) {
    if (buf.order() != ByteOrder.nativeOrder()) {
      throw new IllegalArgumentException("buffers must be in native byte order ("
          + ByteOrder.nativeOrder() + "); call buf.order(ByteOrder.nativeOrder())");
    }
  }

  static void toArray(long address, Object array, long arrayBase, long bytes) {
    UNSAFE.copyMemory(null, address, array, arrayBase, bytes);
  }

  static void fromArray(Object array, long arrayBase, long address, long bytes) {
    UNSAFE.copyMemory(array, arrayBase, null, address, bytes);
  }

  static void copy(long from, long to, long bytes) {
    UNSAFE.copyMemory(from, to, bytes);
  }
}
