package io.treeline.it;

import io.treeline.core.DataType;
import io.treeline.core.HalfFloats;
import io.treeline.core.ReduceOp;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/** Random test data per (seed, rank, element) in every type, and its float64 reference. */
final class ItData {
  private ItData() {
  }

  /** Never 0 or 1; small integers for integer types so sums are exact and do not wrap. */
  static double value(long seed, int rank, int i, DataType t) {
    SplittableRandom r = new SplittableRandom(seed * 1_000_003L + rank * 7919L + i);
    switch (t) {
      case U8: return 2 + r.nextInt(40);
      case I32: case I64: return r.nextInt(-1_000_000, 1_000_000) * 2 + 3;
      default:
        float f = (float) ((r.nextBoolean() ? 1 : -1) * (0.5 + 1.5 * r.nextDouble()));
        return switch (t) {
          case F16 -> HalfFloats.halfToFloat(HalfFloats.floatToHalf(f));
          case BF16 -> HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(f));
          case F32 -> f;
          default -> (f + r.nextDouble() * 1e-9);
        };
    }
  }

  static ByteBuffer encode(long seed, int rank, int n, DataType t) {
    ByteBuffer b = ByteBuffer.allocateDirect(Math.max(1, n * t.size()))
        .order(ByteOrder.nativeOrder());
    for (int i = 0; i < n; i++) {
      t.put(b, i, value(seed, rank, i, t));
    }
    return b;
  }

  static double[] decode(ByteBuffer b, int n, DataType t) {
    double[] out = new double[n];
    for (int i = 0; i < n; i++) {
      out[i] = t.get(b, i);
    }
    return out;
  }

  /** Sum over ranks in float64; the tolerance covers n roundings to the type. */
  static double reference(long seed, int ranks, int i, DataType t, ReduceOp op) {
    double acc = 0;
    for (int r = 0; r < ranks; r++) {
      acc += value(seed, r, i, t);
    }
    return op == ReduceOp.AVG ? (t.isFloating() ? acc / ranks : (long) acc / ranks) : acc;
  }

  static double tolerance(long seed, int ranks, int i, DataType t) {
    double eps = switch (t) {
      case F32 -> 0x1p-23;
      case F64 -> 0x1p-50;
      case F16 -> 0x1p-10;
      case BF16 -> 0x1p-7;
      default -> 0;
    };
    double mag = 0;
    for (int r = 0; r < ranks; r++) {
      mag += Math.abs(value(seed, r, i, t));
    }
    return (ranks + 1) * eps * mag;
  }
}
