package io.treeline.core;

import java.nio.ByteBuffer;
import java.util.Locale;

/**
 * Element types a collective can carry. The half-precision types ({@link #F16}, {@link #BF16})
 * accumulate in f32 inside one reduce call and are rounded once, to nearest even, on store.
 * Integer types wrap in their own width (two's complement; {@link #U8} unsigned).
 */
public enum DataType {
  F32(4, "float32", true),
  F64(8, "float64", true),
  F16(2, "float16", true),
  BF16(2, "bfloat16", true),
  I32(4, "int32", false),
  I64(8, "int64", false),
  U8(1, "uint8", false);

  private final int size;
  private final String longName;
  private final boolean floating;

  DataType(int size, String longName, boolean floating) {
    this.size = size;
    this.longName = longName;
    this.floating = floating;
  }

  /** Bytes per element. */
  public int size() {
    return size;
  }

  /** The name nccl-tests and PyTorch use ("float32", "bfloat16", ...). */
  public String longName() {
    return longName;
  }

  public boolean isFloating() {
    return floating;
  }

  /**
   * Writes {@code v}, converted to this type (half types round to nearest even, integers
   * truncate and wrap), as element {@code index} of {@code b} (absolute, {@code b}'s order).
   * For tools and tests; the reducers work on whole blocks instead.
   */
  public void put(ByteBuffer b, int index, double v) {
    int at = index * size;
    switch (this) {
      case F32 -> b.putFloat(at, (float) v);
      case F64 -> b.putDouble(at, v);
      case F16 -> b.putShort(at, HalfFloats.floatToHalf((float) v));
      case BF16 -> b.putShort(at, HalfFloats.floatToBf16((float) v));
      case I32 -> b.putInt(at, (int) (long) v);
      case I64 -> b.putLong(at, (long) v);
      case U8 -> b.put(at, (byte) (long) v);
      default -> throw new AssertionError(this);
    }
  }

  /** Element {@code index} of {@code b} as a double (u8 unsigned; i64 exact up to 2^53). */
  public double get(ByteBuffer b, int index) {
    int at = index * size;
    return switch (this) {
      case F32 -> b.getFloat(at);
      case F64 -> b.getDouble(at);
      case F16 -> HalfFloats.halfToFloat(b.getShort(at));
      case BF16 -> HalfFloats.bf16ToFloat(b.getShort(at));
      case I32 -> b.getInt(at);
      case I64 -> b.getLong(at);
      case U8 -> b.get(at) & 0xFF;
    };
  }

  /** Accepts "f32", "float32", "F32", "bf16", "bfloat16", ... */
  public static DataType parse(String s) {
    String k = s.trim().toLowerCase(Locale.ROOT);
    for (DataType t : values()) {
      if (t.name().toLowerCase(Locale.ROOT).equals(k) || t.longName.equals(k)) {
        return t;
      }
    }
    switch (k) {
      case "float": return F32;
      case "double": return F64;
      case "half": return F16;
      case "int": return I32;
      case "long": return I64;
      case "byte": return U8;
      default:
        throw new IllegalArgumentException("unknown data type '" + s
            + "'; expected one of f32, f64, f16, bf16, i32, i64, u8");
    }
  }
}
