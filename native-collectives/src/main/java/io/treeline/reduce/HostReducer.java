package io.treeline.reduce;

import io.treeline.core.DataType;
import io.treeline.core.HalfFloats;
import io.treeline.core.ReduceOp;
import java.nio.ByteBuffer;

/**
 * The scalar {@link Reducer}: elementwise reduce of N direct buffers into one, for every
 * {@link DataType} x {@link ReduceOp}; the fallback where the Vector API is absent.
 *
 * <p>The work goes in blocks of {@link #BLOCK} elements that stay in L1: the block of the first
 * input is loaded into an accumulator array of the type's working precision (f32 for
 * f32/f16/bf16, f64, i32 for i32/u8, i64), each further input is loaded into a second array and
 * combined, and the accumulator is stored once. Half types are therefore rounded once per call,
 * and inputs are combined in the order given, so every rank that reduces the same inputs in the
 * same order gets the same bits.
 *
 * <p>An instance owns its scratch arrays: it is not thread-safe, and after construction
 * {@link #reduce} and {@link #copy} allocate nothing. Give each rank (thread) its own.
 */
public final class HostReducer extends ArrayForms {
  /** Elements per block: 8 KiB of f64 accumulator plus 8 KiB of operand. */
  public static final int BLOCK = 1024;

  private final float[] accF = new float[BLOCK];
  private final float[] tmpF = new float[BLOCK];
  private final double[] accD = new double[BLOCK];
  private final double[] tmpD = new double[BLOCK];
  private final int[] accI = new int[BLOCK];
  private final int[] tmpI = new int[BLOCK];
  private final long[] accL = new long[BLOCK];
  private final long[] tmpL = new long[BLOCK];
  private final short[] rawS = new short[BLOCK];
  private final byte[] rawB = new byte[BLOCK];
  private final long[] addr = new long[64];

  /**
   * {@code dst[i] = src[0][i] op src[1][i] op ... op src[n-1][i]} for {@code i < count}, where
   * element {@code i} of input k starts at byte {@code srcOffset[k] + i * type.size()}.
   *
   * @param finish when true and {@code op} is AVG, divide the result by {@code divisor} (the
   *     value is final); ignored for other ops
   */
  @Override
  public void reduce(DataType type, ReduceOp op, ByteBuffer[] src, long[] srcOffset, int n,
      ByteBuffer dst, long dstOffset, long count, boolean finish, int divisor) {
    if (n < 1 || n > addr.length) {
      throw new IllegalArgumentException("reduce takes 1.." + addr.length + " inputs, got " + n);
    }
    long bytes = count * type.size();
    for (int k = 0; k < n; k++) {
      DirectMemory.checkOrder(src[k]);
      addr[k] = DirectMemory.address(src[k], srcOffset[k], bytes);
    }
    DirectMemory.checkOrder(dst);
    long out = DirectMemory.address(dst, dstOffset, bytes);
    boolean divide = finish && op == ReduceOp.AVG && divisor != 1;
    if (n == 1 && !divide) {
      if (addr[0] != out) {
        DirectMemory.copy(addr[0], out, bytes);
      }
      return;
    }
    int es = type.size();
    for (long done = 0; done < count; done += BLOCK) {
      int len = (int) Math.min(BLOCK, count - done);
      long off = done * es;
      switch (type) {
        case F32, F16, BF16 -> reduceBlockF(type, op, n, off, len, out, divide, divisor);
        case F64 -> reduceBlockD(op, n, off, len, out, divide, divisor);
        case I32, U8 -> reduceBlockI(type, op, n, off, len, out, divide, divisor);
        case I64 -> reduceBlockL(op, n, off, len, out, divide, divisor);
        default -> throw new AssertionError(type);
      }
    }
  }

  // ---- f32 / f16 / bf16: accumulate in f32 -------------------------------------------------

  private void reduceBlockF(DataType type, ReduceOp op, int n, long off, int len, long out,
      boolean divide, int divisor) {
    loadF(type, addr[0] + off, accF, len);
    for (int k = 1; k < n; k++) {
      loadF(type, addr[k] + off, tmpF, len);
      combineF(op, accF, tmpF, len);
    }
    if (divide) {
      float d = divisor;
      for (int i = 0; i < len; i++) {
        accF[i] = accF[i] / d;
      }
    }
    storeF(type, accF, out + off, len);
  }

  private void loadF(DataType type, long from, float[] to, int len) {
    switch (type) {
      case F32 -> DirectMemory.toArray(from, to, DirectMemory.FLOAT_BASE, 4L * len);
      case F16 -> {
        DirectMemory.toArray(from, rawS, DirectMemory.SHORT_BASE, 2L * len);
        for (int i = 0; i < len; i++) {
          to[i] = HalfFloats.halfToFloat(rawS[i]);
        }
      }
      case BF16 -> {
        DirectMemory.toArray(from, rawS, DirectMemory.SHORT_BASE, 2L * len);
        for (int i = 0; i < len; i++) {
          to[i] = Float.intBitsToFloat((rawS[i] & 0xFFFF) << 16);
        }
      }
      default -> throw new AssertionError(type);
    }
  }

  private void storeF(DataType type, float[] from, long to, int len) {
    switch (type) {
      case F32 -> DirectMemory.fromArray(from, DirectMemory.FLOAT_BASE, to, 4L * len);
      case F16 -> {
        for (int i = 0; i < len; i++) {
          rawS[i] = HalfFloats.floatToHalf(from[i]);
        }
        DirectMemory.fromArray(rawS, DirectMemory.SHORT_BASE, to, 2L * len);
      }
      case BF16 -> {
        for (int i = 0; i < len; i++) {
          rawS[i] = HalfFloats.floatToBf16(from[i]);
        }
        DirectMemory.fromArray(rawS, DirectMemory.SHORT_BASE, to, 2L * len);
      }
      default -> throw new AssertionError(type);
    }
  }

  private static void combineF(ReduceOp op, float[] acc, float[] v, int len) {
    switch (op) {
      case SUM, AVG -> {
        for (int i = 0; i < len; i++) {
          acc[i] += v[i];
        }
      }
      case PROD -> {
        for (int i = 0; i < len; i++) {
          acc[i] *= v[i];
        }
      }
      case MIN -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.min(acc[i], v[i]);
        }
      }
      case MAX -> {
        for (int i = 0; i < len; i++) {
          acc[i] = Math.max(acc[i], v[i]);
        }
      }
      default -> throw new AssertionError(op);
    }
  }

  // ---- f64 -----------------------------------------------------------------------------------

  private void reduceBlockD(ReduceOp op, int n, long off, int len, long out, boolean divide,
      int divisor) {
    DirectMemory.toArray(addr[0] + off, accD, DirectMemory.DOUBLE_BASE, 8L * len);
    for (int k = 1; k < n; k++) {
      DirectMemory.toArray(addr[k] + off, tmpD, DirectMemory.DOUBLE_BASE, 8L * len);
      switch (op) {
        case SUM, AVG -> {
          for (int i = 0; i < len; i++) {
            accD[i] += tmpD[i];
          }
        }
        case PROD -> {
          for (int i = 0; i < len; i++) {
            accD[i] *= tmpD[i];
          }
        }
        case MIN -> {
          for (int i = 0; i < len; i++) {
            accD[i] = Math.min(accD[i], tmpD[i]);
          }
        }
        case MAX -> {
          for (int i = 0; i < len; i++) {
            accD[i] = Math.max(accD[i], tmpD[i]);
          }
        }
        default -> throw new AssertionError(op);
      }
    }
    if (divide) {
      double d = divisor;
      for (int i = 0; i < len; i++) {
        accD[i] = accD[i] / d;
      }
    }
    DirectMemory.fromArray(accD, DirectMemory.DOUBLE_BASE, out + off, 8L * len);
  }

  // ---- i32 / u8: accumulate in int (wrapping arithmetic gives the same low bits) -------------

  private void reduceBlockI(DataType type, ReduceOp op, int n, long off, int len, long out,
      boolean divide, int divisor) {
    loadI(type, addr[0] + off, accI, len);
    for (int k = 1; k < n; k++) {
      loadI(type, addr[k] + off, tmpI, len);
      switch (op) {
        case SUM, AVG -> {
          for (int i = 0; i < len; i++) {
            accI[i] += tmpI[i];
          }
        }
        case PROD -> {
          for (int i = 0; i < len; i++) {
            accI[i] *= tmpI[i];
          }
        }
        case MIN -> {
          for (int i = 0; i < len; i++) {
            accI[i] = Math.min(accI[i], tmpI[i]);
          }
        }
        case MAX -> {
          for (int i = 0; i < len; i++) {
            accI[i] = Math.max(accI[i], tmpI[i]);
          }
        }
        default -> throw new AssertionError(op);
      }
    }
    if (divide) {
      if (type == DataType.U8) {
        for (int i = 0; i < len; i++) {
          accI[i] = (accI[i] & 0xFF) / divisor;
        }
      } else {
        for (int i = 0; i < len; i++) {
          accI[i] = accI[i] / divisor;
        }
      }
    }
    if (type == DataType.I32) {
      DirectMemory.fromArray(accI, DirectMemory.INT_BASE, out + off, 4L * len);
    } else {
      for (int i = 0; i < len; i++) {
        rawB[i] = (byte) accI[i];
      }
      DirectMemory.fromArray(rawB, DirectMemory.BYTE_BASE, out + off, len);
    }
  }

  private void loadI(DataType type, long from, int[] to, int len) {
    if (type == DataType.I32) {
      DirectMemory.toArray(from, to, DirectMemory.INT_BASE, 4L * len);
    } else {
      DirectMemory.toArray(from, rawB, DirectMemory.BYTE_BASE, len);
      for (int i = 0; i < len; i++) {
        to[i] = rawB[i] & 0xFF;
      }
    }
  }

  // ---- i64 -----------------------------------------------------------------------------------

  private void reduceBlockL(ReduceOp op, int n, long off, int len, long out, boolean divide,
      int divisor) {
    DirectMemory.toArray(addr[0] + off, accL, DirectMemory.LONG_BASE, 8L * len);
    for (int k = 1; k < n; k++) {
      DirectMemory.toArray(addr[k] + off, tmpL, DirectMemory.LONG_BASE, 8L * len);
      switch (op) {
        case SUM, AVG -> {
          for (int i = 0; i < len; i++) {
            accL[i] += tmpL[i];
          }
        }
        case PROD -> {
          for (int i = 0; i < len; i++) {
            accL[i] *= tmpL[i];
          }
        }
        case MIN -> {
          for (int i = 0; i < len; i++) {
            accL[i] = Math.min(accL[i], tmpL[i]);
          }
        }
        case MAX -> {
          for (int i = 0; i < len; i++) {
            accL[i] = Math.max(accL[i], tmpL[i]);
          }
        }
        default -> throw new AssertionError(op);
      }
    }
    if (divide) {
      for (int i = 0; i < len; i++) {
        accL[i] = accL[i] / divisor;
      }
    }
    DirectMemory.fromArray(accL, DirectMemory.LONG_BASE, out + off, 8L * len);
  }
}
