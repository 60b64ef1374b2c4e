package io.treeline.core;

import java.nio.ByteBuffer;
import java.util.Locale;

/**
 * Element types a collective can carry. The half-precision types ({@link #F16}, {@link #BF16})
 * accumulate in f32 inside one reduce call and are rounded once, to nearest even, on store.
 * Integer types wrap in their own width (two's complement; {@link #U8} unsigned).
 */
public enum DataType {
  /** IEEE 754 binary32 ({@code float}). */
  F32(4, "float32", true),
  /** IEEE 754 binary64 ({@code double}). */
  F64(8, "float64", true),
  /** IEEE 754 binary16 (half precision), carried as {@code short} bits. */
  F16(2, "float16", true),
  /** bfloat16 (the top half of a binary32), carried as {@code short} bits. */
  BF16(2, "bfloat16", true),
  /** Signed 32-bit integers ({@code int}). */
  I32(4, "int32", false),
  /** Signed 64-bit integers ({@code long}). */
  I64(8, "int64", false),
  /** Unsigned 8-bit integers (a {@code byte} read as 0..255). */
  U8(1, "uint8", false);

  private final int size;
  private final String longName;
  private final boolean floating;

  DataType(int size, String longName, boolean floating) {
    this.size = size;
    this.longName = longName;
    this.floating = floating;
  }

  /**
   * Bytes per element.
   *
   * @return 1, 2, 4 or 8
   */
  public int size() {
    return size;
  }

  /**
   * The name nccl-tests and PyTorch use.
   *
   * @return "float32", "bfloat16", ...
   */
  public String longName() {
    return longName;
  }

  /**
   * Whether this is a floating-point type.
   *
   * @return true for f32, f64, f16 and bf16
   */
  public boolean isFloating() {
    return floating;
  }

  /**
   * Writes {@code v}, converted to this type (half types round to nearest even, integers
   * truncate and wrap), as element {@code index} of {@code b} (absolute, {@code b}'s order).
   * For tools and tests; the reducers work on whole blocks instead.
   *
   * @param b the buffer
   * @param index the element's index (not its byte offset)
   * @param v the value
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

  /**
   * Element {@code index} of {@code b} as a double (u8 unsigned; i64 exact up to 2^53).
   *
   * @param b the buffer (absolute, in its byte order)
   * @param index the element's index (not its byte offset)
   * @return the value
   */
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

  /**
   * The type a name means: {@code f32}, {@code float32}, {@code F32}, {@code float},
   * {@code bf16}, {@code bfloat16}, ... (any case).
   *
   * @param s the name
   * @return the type
   * @throws IllegalArgumentException naming the valid names when {@code s} is none
   */
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
