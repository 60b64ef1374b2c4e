package io.treeline.testing;

import io.treeline.core.DataType;
import io.treeline.core.HalfFloats;
import io.treeline.core.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;

/**
 * Test data for collectives: random values that are never 0 or 1, their encoding in every
 * data type, and an independent reference (float64 for floating types, exact wrapping
 * arithmetic for integers) with the tolerance a correct reduction must meet.
 */
public final class Elements {
  private Elements() {
  }

  public static ByteBuffer direct(long count, DataType t) {
    return ByteBuffer.allocateDirect(Math.toIntExact(Math.max(1, count * t.size())))
        .order(ByteOrder.nativeOrder());
  }

  /** Values representable in {@code t}, never 0 or 1, suited to {@code op}. */
  public static double[] random(Random rnd, long count, DataType t, ReduceOp op) {
    double[] v = new double[Math.toIntExact(count)];
    for (int i = 0; i < v.length; i++) {
      double x;
      do {
        x = draw(rnd, t, op);
      } while (x == 0 || x == 1);
      v[i] = x;
    }
    return v;
  }

  private static double draw(Random rnd, DataType t, ReduceOp op) {
    switch (t) {
      case U8:
        return op == ReduceOp.PROD ? 2 + rnd.nextInt(4) : 2 + rnd.nextInt(254);
      case I32:
        return op == ReduceOp.PROD ? rnd.nextInt(7) - 3 : rnd.nextInt();
      case I64:
        // within +-2^52 so the double that carries it here is exact
        return op == ReduceOp.PROD ? rnd.nextInt(7) - 3 : (double) (rnd.nextLong() >> 12);
      default:
        double mag = op == ReduceOp.PROD ? 0.9 + 0.2 * rnd.nextDouble()
            : 0.5 + 1.5 * rnd.nextDouble();
        double x = rnd.nextBoolean() || op == ReduceOp.PROD ? mag : -mag;
        return decode(encodeBits(x, t), t); // round to the type
    }
  }

  public static void put(ByteBuffer b, int i, double x, DataType t) {
    t.put(b, i, x);
  }

  /** Element i of b, as a double (i64 values beyond 2^53 lose bits: use {@link #getLong}). */
  public static double get(ByteBuffer b, int i, DataType t) {
    return t.get(b, i);
  }

  public static long getLong(ByteBuffer b, int i, DataType t) {
    switch (t) {
      case I32: return b.getInt(i * 4);
      case I64: return b.getLong(i * 8);
      case U8: return b.get(i) & 0xFF;
      default: throw new AssertionError(t);
    }
  }

  private static long encodeBits(double x, DataType t) {
    switch (t) {
      case F16: return HalfFloats.floatToHalf((float) x);
      case BF16: return HalfFloats.floatToBf16((float) x);
      case F32: return Float.floatToRawIntBits((float) x);
      default: return Double.doubleToRawLongBits(x);
    }
  }

  private static double decode(long bits, DataType t) {
    switch (t) {
      case F16: return HalfFloats.halfToFloat((short) bits);
      case BF16: return HalfFloats.bf16ToFloat((short) bits);
      case F32: return Float.intBitsToFloat((int) bits);
      default: return Double.longBitsToDouble(bits);
    }
  }

  /** The float64 (or exact integer) reference of reducing inputs[0..n)[i]. */
  public static double reference(double[][] inputs, int i, DataType t, ReduceOp op) {
    if (!t.isFloating()) {
      return referenceLong(inputs, i, t, op);
    }
    double acc = inputs[0][i];
    for (int k = 1; k < inputs.length; k++) {
      double v = inputs[k][i];
      acc = switch (op) {
        case SUM, AVG -> acc + v;
        case PROD -> acc * v;
        case MIN -> Math.min(acc, v);
        case MAX -> Math.max(acc, v);
      };
    }
    return op == ReduceOp.AVG ? acc / inputs.length : acc;
  }

  /** The exact reference for integer types, with the type's wrapping. */
  public static long referenceLong(double[][] inputs, int i, DataType t, ReduceOp op) {
    long acc = (long) inputs[0][i];
    for (int k = 1; k < inputs.length; k++) {
      long v = (long) inputs[k][i];
      acc = switch (op) {
        case SUM, AVG -> acc + v;
        case PROD -> acc * v;
        case MIN -> Math.min(acc, v);
        case MAX -> Math.max(acc, v);
      };
    }
    acc = wrap(acc, t);
    if (op == ReduceOp.AVG) {
      acc = wrap(acc / inputs.length, t);
    }
    return acc;
  }

  public static long wrap(long v, DataType t) {
    return switch (t) {
      case I32 -> (int) v;
      case U8 -> v & 0xFF;
      default -> v;
    };
  }

  /**
   * How far a correct result may be from the float64 reference: each of up to n-1 roundings to
   * the type costs one unit in the last place of the running magnitude.
   */
  public static double tolerance(double[][] inputs, int i, DataType t, ReduceOp op) {
    if (!t.isFloating() || op == ReduceOp.MIN || op == ReduceOp.MAX) {
      return 0;
    }
    double eps = switch (t) {
      case F32 -> 0x1p-23;
      case F64 -> 0x1p-52;
      case F16 -> 0x1p-10;
      case BF16 -> 0x1p-7;
      default -> 0;
    };
    double mag = 0;
    if (op == ReduceOp.PROD) {
      mag = Math.abs(reference(inputs, i, t, op));
    } else {
      for (double[] in : inputs) {
        mag += Math.abs(in[i]);
      }
      if (op == ReduceOp.AVG) {
        mag /= inputs.length;
      }
    }
    return (inputs.length + 1) * eps * mag;
  }
}
