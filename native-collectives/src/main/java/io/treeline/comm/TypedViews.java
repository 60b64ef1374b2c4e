package io.treeline.comm;

import io.treeline.core.DataType;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * A rank's segment buffers seen as {@code FloatBuffer}, {@code DoubleBuffer}, {@code IntBuffer}
 * and {@code LongBuffer}, made once, so that the array and typed-buffer forms of the
 * collectives copy with the JDK's bulk absolute {@code put} (a memory copy when the byte orders
 * agree) and allocate nothing per call.
 */
final class TypedViews {
  private final Buffer[] in = new Buffer[DataType.values().length];
  private final Buffer[] out = new Buffer[DataType.values().length];

  TypedViews(ByteBuffer input, ByteBuffer output) {
    for (DataType t : new DataType[] {DataType.F32, DataType.F64, DataType.I32, DataType.I64}) {
      in[t.ordinal()] = view(input, t);
      out[t.ordinal()] = view(output, t);
    }
  }

  private static Buffer view(ByteBuffer b, DataType t) {
    ByteBuffer d = b.duplicate().clear().order(ByteOrder.nativeOrder());
    return switch (t) {
      case F32 -> d.asFloatBuffer();
      case F64 -> d.asDoubleBuffer();
      case I32 -> d.asIntBuffer();
      case I64 -> d.asLongBuffer();
      default -> throw new AssertionError(t);
    };
  }

  Buffer in(DataType t) {
    return in[t.ordinal()];
  }

  Buffer out(DataType t) {
    return out[t.ordinal()];
  }

  /** {@code dst[at, at + n) = src[from, from + n)} by absolute index, positions untouched. */
  static void copy(Buffer dst, int at, Buffer src, int from, int n) {
    if (dst instanceof FloatBuffer d) {
      d.put(at, (FloatBuffer) src, from, n);
    } else if (dst instanceof DoubleBuffer d) {
      d.put(at, (DoubleBuffer) src, from, n);
    } else if (dst instanceof IntBuffer d) {
      d.put(at, (IntBuffer) src, from, n);
    } else {
      ((LongBuffer) dst).put(at, (LongBuffer) src, from, n);
    }
  }
}
