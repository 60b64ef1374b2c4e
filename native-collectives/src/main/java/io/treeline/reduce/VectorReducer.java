package io.treeline.reduce;

import io.treeline.core.DataType;
import io.treeline.core.HalfFloats;
import io.treeline.core.ReduceOp;
import io.treeline.core.Tuning;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Reducer} on the Vector API ({@code jdk.incubator.vector}): loads and stores go straight
 * between the direct buffers and SIMD registers, so a two-input f32 sum reads each input once
 * and writes the output once, as memcpy does. Bits are the same as {@link HostReducer}'s: the
 * same order of combination, the same IEEE division for AVG, bf16 widened to f32 and rounded
 * to nearest even once, with HalfFloats' NaN encoding.
 *
 * <p>Work goes in blocks of {@link #BLOCK} elements:
 *
 * <pre>
 *   2 inputs, f32/f64/i32/i64, and bf16 sum/avg:  dst = a op b             (one pass)
 *   f32 sum/avg, more inputs:  acc0 = a + b + c + d, acc0 += next three, ..., the last pass
 *                              into dst (a pass per three inputs, each input read once)
 *   bf16 sum/avg, more inputs: acc0 (f32) = the first two or four widened and added, acc0 +=
 *                              the next three, ..., the last one added and rounded into dst
 *   bf16, other ops:  every input widened into f32 scratch (acc1), combined into acc0, which
 *                     is rounded into dst once
 * </pre>
 *
 * <p>Each op has its own loop so that the Vector API sees a constant operator (the JIT then
 * keeps every vector in a register and allocates nothing). What the JIT would run as allocating
 * Java code goes to {@link HostReducer}'s scalar loops: i64 multiply and integer division (AVG of
 * i32/i64), which AVX2 has no instruction for; u8; and f16, whose vectorised conversion (written
 * and tested bit-exact in the same int-lane style) C2 on JDK 17 did not keep in registers when
 * f16 was the only type a JVM reduced (4 MiB allocated per 1 MiB call), so it was taken out.
 * And more than two f64/i32/i64 inputs, or f32 ones under PROD/MIN/MAX: each vector load or
 * store through a ByteBuffer costs JDK 17 a dozen instructions of checks, so where HostReducer's
 * L1 array loops (one memcpy per input block, then a loop C2 vectorises by itself) do the same
 * work as a pairwise pass per input here they are faster (JMH, 8 inputs: 0.26 vs 0.17 of memcpy
 * at 1 MiB, 0.55 vs 0.47 at 32 MiB). The f32 sum of more inputs reads up to four a pass and beats
 * them (docs/BENCHMARKS.md, 2026-12-07).
 */
public final class VectorReducer extends ArrayForms {
  /** Elements per block of two inputs: 8 KiB of f32. */
  public static final int BLOCK = 2048;
  /**
   * Elements per block of more inputs: 64 KiB of f32 scratch per accumulator (L2). The n-input
   * sums run a pass per few inputs over a block, so a block is the length of each input's
   * stream between jumps: at 2048 (8 KiB, L1) eight f32 inputs of 32 MiB reduced at 0.65-0.7x
   * the speed they reach at 16384, bf16 at 0.9x, and nothing was slower in cache (JMH,
   * 2026-12-07, docs/BENCHMARKS.md). Two inputs stream in one pass, where a block is only a
   * loop's length, so they keep the shorter one.
   */
  public static final int WIDE_BLOCK = 16384;

  private static final ByteOrder NO = ByteOrder.nativeOrder();
  private static final VectorSpecies<Float> SF = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Double> SD = DoubleVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Integer> SI = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Long> SL = LongVector.SPECIES_PREFERRED;
  // The bf16 kernels' integer constants as vectors made once from the constant species, so that
  // no loop broadcasts a scalar: on JDK 17, IntVector.and(int) and the like broadcast through the
  // receiver's species, and in JVMs compiled under load C2 met that species as a value read from
  // memory (-XX:+PrintIntrinsics: "missing constant: vclass=DecodeN etype=ConP vlen=LoadI", a
  // failed broadcast), fell back to Java for it and boxed every vector of the loop for good.
  // The f32 kernels, which broadcast nothing, never did (docs/BENCHMARKS.md, 2026-12-07).
  // Likewise the bits change lanes through viewAsFloatingLanes / viewAsIntegralLanes, whose
  // virtual call sits in IntVector / FloatVector, not reinterpretAsFloats / reinterpretAsInts,
  // whose call sits in AbstractVector and whose receiver profile every vector class shares: with
  // both changes, the bf16 SUM and AVG kernels kept no boxing in 14 of 14 JVMs with the other
  // core busy, against 5 of 12 boxing before.
  private static final IntVector HI16 = IntVector.broadcast(SI, 0xFFFF_0000);
  private static final IntVector R7FFF = IntVector.broadcast(SI, 0x7FFF);
  private static final IntVector ONE = IntVector.broadcast(SI, 1);
  private static final IntVector QUIET = IntVector.broadcast(SI, 0x40);
  private static final IntVector ABS = IntVector.broadcast(SI, 0x7FFF_FFFF);
  private static final IntVector INF = IntVector.broadcast(SI, 0x7F80_0000);

  static {
    // Load DirectByteBufferR, the read-only subclass of DirectByteBuffer, before any kernel is
    // compiled. C2 compiles a kernel assuming the class hierarchy it sees; while DirectByteBuffer
    // has no loaded subclass it binds its methods as the only ones, and the first read-only
    // direct buffer anywhere in the JVM (a test's JMX call, a library's asReadOnlyBuffer)
    // invalidates every such kernel at once: they then run in C1 or the interpreter, boxing
    // every vector, until compiled again. Found in the compiler log (dependency_failed,
    // witness DirectByteBufferR) after a kernel warm-up, 2026-12-07.
    ByteBuffer.allocateDirect(1).asReadOnlyBuffer();
  }

  private static final int SUM = 0;
  private static final int PROD = 1;
  private static final int MIN = 2;
  private static final int MAX = 3;

  /**
   * Below this many elements a reduce runs {@link HostReducer}'s loops. A kernel that C2 first
   * compiled from calls too short for one vector (an 8-byte allreduce: two floats) has its vector
   * loop compiled as a never-taken branch; the first longer call then deoptimises it and runs the
   * Vector API interpreted, boxing every vector, until C2 compiles it again. With this floor
   * every call that reaches a kernel runs its vector loop, and a few elements gain nothing from
   * SIMD anyway. {@code treeline.vectorMinElements} overrides it (measuring the effect; 0 = the
   * kernels for every count).
   */
  public static final long MIN_ELEMENTS = Tuning.VECTOR_MIN_ELEMENTS.getLong();

  private final long minElements;
  private final HostReducer scalar = new HostReducer();

  public VectorReducer() {
    this(MIN_ELEMENTS);
  }

  /** With the kernels from {@code minElements} elements (tests: 0, every count). */
  public VectorReducer(long minElements) {
    this.minElements = minElements;
  }
  /** The f32 accumulator and operand of one bf16 block. */
  private final ByteBuffer acc0 = ByteBuffer.allocateDirect(WIDE_BLOCK * 4).order(NO);
  private final ByteBuffer acc1 = ByteBuffer.allocateDirect(WIDE_BLOCK * 4).order(NO);

  @Override
  public void reduce(DataType type, ReduceOp op, ByteBuffer[] src, long[] srcOffset, int n,
      ByteBuffer dst, long dstOffset, long count, boolean finish, int divisor) {
    boolean divide = finish && op == ReduceOp.AVG && divisor != 1;
    boolean integerDivide = divide && (type == DataType.I32 || type == DataType.I64);
    int o = o(op);
    if (type == DataType.U8 || type == DataType.F16 || (n == 1 && !divide) || integerDivide
        || (type == DataType.I64 && op == ReduceOp.PROD)
        || (n > 2 && type != DataType.BF16 && !(type == DataType.F32 && o == SUM))
        || count < minElements) {
      // u8, f16 and memcpy; integer AVG and i64 PROD have no AVX2 instruction; more than two
      // f64/i32/i64 inputs, or f32 ones combined by other ops than sum, run faster as the
      // scalar reducer's array loops (see class doc); calls too short for the kernels' vector
      // loops (MIN_ELEMENTS)
      scalar.reduce(type, op, src, srcOffset, n, dst, dstOffset, count, finish, divisor);
      return;
    }
    if (n < 1 || n > 64) {
      throw new IllegalArgumentException("reduce takes 1..64 inputs, got " + n);
    }
    int es = type.size();
    long bytes = count * es;
    for (int k = 0; k < n; k++) {
      DirectMemory.checkOrder(src[k]);
      DirectMemory.address(src[k], srcOffset[k], bytes); // checks direct and bounds
    }
    DirectMemory.checkOrder(dst);
    DirectMemory.address(dst, dstOffset, bytes);
    float fdiv = divide ? divisor : 1f;
    int block = n > 2 ? WIDE_BLOCK : BLOCK;
    for (long done = 0; done < count; done += block) {
      int len = (int) Math.min(block, count - done);
      int off = (int) (done * es);
      int d = (int) dstOffset + off;
      switch (type) {
        case F32 -> blockF32(o, src, srcOffset, n, off, dst, d, len, divide, fdiv);
        case F64 -> blockF64(o, src, srcOffset, n, off, dst, d, len, divide, divisor);
        case BF16 -> blockBf16(o, src, srcOffset, n, off, dst, d, len, divide, fdiv);
        case I32 -> blockI32(o, src, srcOffset, n, off, dst, d, len);
        case I64 -> blockI64(o, src, srcOffset, n, off, dst, d, len);
        default -> throw new AssertionError(type);
      }
    }
  }

  private static int o(ReduceOp op) {
    return switch (op) {
      case SUM, AVG -> SUM;
      case PROD -> PROD;
      case MIN -> MIN;
      case MAX -> MAX;
    };
  }

  // ---- block drivers: which buffers each pass reads and writes ---------------------------

  private void blockF32(int o, ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst,
      int d, int len, boolean divide, float div) {
    if (n == 1) {
      divF32(src[0], (int) so[0] + off, dst, d, len, div);
      return;
    }
    if (n > 2) {
      sumF32(src, so, n, off, dst, d, len); // sum only (the others run HostReducer's loops)
    } else {
      f32(o, src[0], (int) so[0] + off, src[1], (int) so[1] + off, dst, d, len);
    }
    if (divide) {
      divF32(dst, d, dst, d, len, div);
    }
  }

  private void blockF64(int o, ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst,
      int d, int len, boolean divide, int div) {
    if (n == 1) {
      divF64(src[0], (int) so[0] + off, dst, d, len, div);
      return;
    }
    f64(o, src[0], (int) so[0] + off, src[1], (int) so[1] + off, dst, d, len);
    if (divide) {
      divF64(dst, d, dst, d, len, div);
    }
  }

  /**
   * f32 sum of more than two inputs: up to four inputs a pass, the partial sum kept in acc0 (L1)
   * between passes and the last pass writing dst, so each input is read once and the partial
   * sum crosses L1 once per three inputs. Left to right, as HostReducer adds: ((a + b) + c) + d.
   */
  private void sumF32(ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst, int d,
      int len) {
    int k = Math.min(4, n);
    ByteBuffer to = k == n ? dst : acc0;
    int tO = k == n ? d : 0;
    if (k == 3) {
      add3F32(src[0], (int) so[0] + off, src[1], (int) so[1] + off, src[2], (int) so[2] + off,
          to, tO, len);
    } else {
      add4F32(src[0], (int) so[0] + off, src[1], (int) so[1] + off, src[2], (int) so[2] + off,
          src[3], (int) so[3] + off, to, tO, len);
    }
    while (k < n) {
      int m = Math.min(3, n - k);
      boolean last = k + m == n;
      to = last ? dst : acc0;
      tO = last ? d : 0;
      switch (m) {
        case 1 -> addF32(acc0, 0, src[k], (int) so[k] + off, to, tO, len);
        case 2 -> add3F32(acc0, 0, src[k], (int) so[k] + off, src[k + 1],
            (int) so[k + 1] + off, to, tO, len);
        default -> add4F32(acc0, 0, src[k], (int) so[k] + off, src[k + 1],
            (int) so[k + 1] + off, src[k + 2], (int) so[k + 2] + off, to, tO, len);
      }
      k += m;
    }
  }

  /** bf16: widen into acc0 (and acc1), combine in f32, round into dst once. */
  private void blockBf16(int o, ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst,
      int d, int len, boolean divide, float div) {
    if (n == 2 && o == SUM) {
      // every receive-and-reduce step, and AVG: one pass in registers, no scratch (4-10x the
      // scratch path)
      sumBf16(src[0], (int) so[0] + off, src[1], (int) so[1] + off, dst, d, len, divide, div);
      return;
    }
    if (o == SUM) {
      sumBf16(src, so, n, off, dst, d, len, divide, div);
      return;
    }
    widen(src[0], (int) so[0] + off, acc0, len);
    for (int k = 1; k < n; k++) {
      widen(src[k], (int) so[k] + off, acc1, len);
      f32(o, acc0, 0, acc1, 0, acc0, 0, len);
    }
    if (divide) {
      divF32(acc0, 0, acc0, 0, len, div);
    }
    toBf16(acc0, dst, d, len);
  }

  private void blockI32(int o, ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst,
      int d, int len) {
    i32(o, src[0], (int) so[0] + off, src[1], (int) so[1] + off, dst, d, len);
  }

  private void blockI64(int o, ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst,
      int d, int len) {
    i64(o, src[0], (int) so[0] + off, src[1], (int) so[1] + off, dst, d, len);
  }

  // ---- kernels: dst = a op b over len elements at byte offsets; one small method per op, so
  //      that C2 compiles each loop on its own with every Vector API call inlined ----------

  private static void f32(int o, ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    switch (o) {
      case SUM -> addF32(a, ao, b, bo, d, dO, len);
      case PROD -> mulF32(a, ao, b, bo, d, dO, len);
      case MIN -> minF32(a, ao, b, bo, d, dO, len);
      case MAX -> maxF32(a, ao, b, bo, d, dO, len);
      default -> throw new AssertionError(o);
    }
  }

  private static void addF32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SF.loopBound(len); i < bound; i += SF.length()) {
      lf(a, ao + 4 * i).add(lf(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i, a.getFloat(ao + 4 * i) + b.getFloat(bo + 4 * i));
    }
  }

  // The n-input kernels below call the Vector API only, no helper of this class: a helper that
  // takes or returns a vector and was compiled on its own before its caller (its compiled code
  // past InlineSmallCode) is no longer inlined, and every vector crossing the call is boxed.

  private static void add3F32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer c, int co,
      ByteBuffer d, int dO, int len) {
    int i = 0;
    for (int bound = SF.loopBound(len); i < bound; i += SF.length()) {
      FloatVector.fromByteBuffer(SF, a, ao + 4 * i, NO)
          .add(FloatVector.fromByteBuffer(SF, b, bo + 4 * i, NO))
          .add(FloatVector.fromByteBuffer(SF, c, co + 4 * i, NO))
          .intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i,
          a.getFloat(ao + 4 * i) + b.getFloat(bo + 4 * i) + c.getFloat(co + 4 * i));
    }
  }

  private static void add4F32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer c, int co,
      ByteBuffer e, int eo, ByteBuffer d, int dO, int len) {
    int i = 0;
    for (int bound = SF.loopBound(len); i < bound; i += SF.length()) {
      FloatVector.fromByteBuffer(SF, a, ao + 4 * i, NO)
          .add(FloatVector.fromByteBuffer(SF, b, bo + 4 * i, NO))
          .add(FloatVector.fromByteBuffer(SF, c, co + 4 * i, NO))
          .add(FloatVector.fromByteBuffer(SF, e, eo + 4 * i, NO))
          .intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i, a.getFloat(ao + 4 * i) + b.getFloat(bo + 4 * i)
          + c.getFloat(co + 4 * i) + e.getFloat(eo + 4 * i));
    }
  }

  private static void mulF32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SF.loopBound(len); i < bound; i += SF.length()) {
      lf(a, ao + 4 * i).mul(lf(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i, a.getFloat(ao + 4 * i) * b.getFloat(bo + 4 * i));
    }
  }

  private static void minF32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SF.loopBound(len); i < bound; i += SF.length()) {
      lf(a, ao + 4 * i).min(lf(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i, Math.min(a.getFloat(ao + 4 * i), b.getFloat(bo + 4 * i)));
    }
  }

  private static void maxF32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SF.loopBound(len); i < bound; i += SF.length()) {
      lf(a, ao + 4 * i).max(lf(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i, Math.max(a.getFloat(ao + 4 * i), b.getFloat(bo + 4 * i)));
    }
  }

  private static void divF32(ByteBuffer a, int ao, ByteBuffer d, int dO, int len, float div) {
    int step = SF.length();
    int bound = SF.loopBound(len);
    int i = 0;
    for (; i < bound; i += step) {
      lf(a, ao + 4 * i).div(div).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putFloat(dO + 4 * i, a.getFloat(ao + 4 * i) / div);
    }
  }

  private static void f64(int o, ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    switch (o) {
      case SUM -> addF64(a, ao, b, bo, d, dO, len);
      case PROD -> mulF64(a, ao, b, bo, d, dO, len);
      case MIN -> minF64(a, ao, b, bo, d, dO, len);
      case MAX -> maxF64(a, ao, b, bo, d, dO, len);
      default -> throw new AssertionError(o);
    }
  }

  private static void addF64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SD.loopBound(len); i < bound; i += SD.length()) {
      ld(a, ao + 8 * i).add(ld(b, bo + 8 * i)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putDouble(dO + 8 * i, a.getDouble(ao + 8 * i) + b.getDouble(bo + 8 * i));
    }
  }

  private static void mulF64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SD.loopBound(len); i < bound; i += SD.length()) {
      ld(a, ao + 8 * i).mul(ld(b, bo + 8 * i)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putDouble(dO + 8 * i, a.getDouble(ao + 8 * i) * b.getDouble(bo + 8 * i));
    }
  }

  private static void minF64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SD.loopBound(len); i < bound; i += SD.length()) {
      ld(a, ao + 8 * i).min(ld(b, bo + 8 * i)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putDouble(dO + 8 * i, Math.min(a.getDouble(ao + 8 * i), b.getDouble(bo + 8 * i)));
    }
  }

  private static void maxF64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SD.loopBound(len); i < bound; i += SD.length()) {
      ld(a, ao + 8 * i).max(ld(b, bo + 8 * i)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putDouble(dO + 8 * i, Math.max(a.getDouble(ao + 8 * i), b.getDouble(bo + 8 * i)));
    }
  }

  private static void divF64(ByteBuffer a, int ao, ByteBuffer d, int dO, int len, int div) {
    double dv = div;
    int step = SD.length();
    int bound = SD.loopBound(len);
    int i = 0;
    for (; i < bound; i += step) {
      ld(a, ao + 8 * i).div(dv).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putDouble(dO + 8 * i, a.getDouble(ao + 8 * i) / dv);
    }
  }

  private static void i32(int o, ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    switch (o) {
      case SUM -> addI32(a, ao, b, bo, d, dO, len);
      case PROD -> mulI32(a, ao, b, bo, d, dO, len);
      case MIN -> minI32(a, ao, b, bo, d, dO, len);
      case MAX -> maxI32(a, ao, b, bo, d, dO, len);
      default -> throw new AssertionError(o);
    }
  }

  private static void addI32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SI.loopBound(len); i < bound; i += SI.length()) {
      li(a, ao + 4 * i).add(li(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putInt(dO + 4 * i, a.getInt(ao + 4 * i) + b.getInt(bo + 4 * i));
    }
  }

  private static void mulI32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SI.loopBound(len); i < bound; i += SI.length()) {
      li(a, ao + 4 * i).mul(li(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putInt(dO + 4 * i, a.getInt(ao + 4 * i) * b.getInt(bo + 4 * i));
    }
  }

  private static void minI32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SI.loopBound(len); i < bound; i += SI.length()) {
      li(a, ao + 4 * i).min(li(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putInt(dO + 4 * i, Math.min(a.getInt(ao + 4 * i), b.getInt(bo + 4 * i)));
    }
  }

  private static void maxI32(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SI.loopBound(len); i < bound; i += SI.length()) {
      li(a, ao + 4 * i).max(li(b, bo + 4 * i)).intoByteBuffer(d, dO + 4 * i, NO);
    }
    for (; i < len; i++) {
      d.putInt(dO + 4 * i, Math.max(a.getInt(ao + 4 * i), b.getInt(bo + 4 * i)));
    }
  }

  private static void i64(int o, ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    switch (o) {
      case SUM -> addI64(a, ao, b, bo, d, dO, len);
      case MIN -> minI64(a, ao, b, bo, d, dO, len);
      case MAX -> maxI64(a, ao, b, bo, d, dO, len);
      default -> throw new AssertionError(o); // PROD goes to the scalar reducer
    }
  }

  private static void addI64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SL.loopBound(len); i < bound; i += SL.length()) {
      ll(a, ao + 8 * i).add(ll(b, bo + 8 * i)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putLong(dO + 8 * i, a.getLong(ao + 8 * i) + b.getLong(bo + 8 * i));
    }
  }

  /** AVX2 has no 64-bit min: compare and blend. */
  private static void minI64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SL.loopBound(len); i < bound; i += SL.length()) {
      LongVector x = ll(a, ao + 8 * i);
      LongVector y = ll(b, bo + 8 * i);
      x.blend(y, y.compare(VectorOperators.LT, x)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putLong(dO + 8 * i, Math.min(a.getLong(ao + 8 * i), b.getLong(bo + 8 * i)));
    }
  }

  /** AVX2 has no 64-bit max: compare and blend. */
  private static void maxI64(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len) {
    int i = 0;
    for (int bound = SL.loopBound(len); i < bound; i += SL.length()) {
      LongVector x = ll(a, ao + 8 * i);
      LongVector y = ll(b, bo + 8 * i);
      x.blend(y, y.compare(VectorOperators.GT, x)).intoByteBuffer(d, dO + 8 * i, NO);
    }
    for (; i < len; i++) {
      d.putLong(dO + 8 * i, Math.max(a.getLong(ao + 8 * i), b.getLong(bo + 8 * i)));
    }
  }

  // ---- half conversions, in int lanes -----------------------------------------------------
  //
  // An int lane holds two bf16, element 2j in its low 16 bits and 2j+1 in its high ones. A
  // group of 2 x SF.length() of them is widened de-interleaved into the f32 scratch: the even
  // elements in the first SF.length() floats, the odd ones in the next. The reduce is
  // elementwise and every input and the output use the same layout, so only the narrowing has
  // to undo it; the tail past the last whole group stays in natural order. No lane changes
  // width, so every operation is a plain AVX2 integer or float instruction.

  /** bf16 at {@code from[fo..]} into f32 at {@code to[0..]} (the widened layout), exact. */
  private static void widen(ByteBuffer from, int fo, ByteBuffer to, int len) {
    int step = 2 * SF.length();
    int vb = SF.vectorByteSize();
    int bound = len - len % step;
    int i = 0;
    for (; i < bound; i += step) {
      IntVector pairs = li(from, fo + 2 * i);
      pairs.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes().intoByteBuffer(to, 4 * i,
          NO);
      pairs.and(HI16).viewAsFloatingLanes().intoByteBuffer(to, 4 * i + vb, NO);
    }
    for (; i < len; i++) {
      to.putFloat(4 * i, HalfFloats.bf16ToFloat(from.getShort(fo + 2 * i)));
    }
  }

  /** f32 at {@code from[0..]} (the widened layout) to bf16 at {@code to[tO..]}. */
  private static void toBf16(ByteBuffer from, ByteBuffer to, int tO, int len) {
    int step = 2 * SF.length();
    int vb = SF.vectorByteSize();
    int bound = len - len % step;
    int i = 0;
    for (; i < bound; i += step) {
      IntVector even = f32ToBf16(li(from, 4 * i));
      IntVector odd = f32ToBf16(li(from, 4 * i + vb));
      even.or(odd.lanewise(VectorOperators.LSHL, 16)).intoByteBuffer(to, tO + 2 * i, NO);
    }
    for (; i < len; i++) {
      to.putShort(tO + 2 * i, HalfFloats.floatToBf16(from.getFloat(4 * i)));
    }
  }

  /**
   * {@code d = round((a + b) [/ div])} for bf16, in registers: an int lane's two halves widen
   * to an even and an odd float vector, which are added, divided, rounded and packed back.
   */
  private static void sumBf16(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d, int dO,
      int len, boolean divide, float div) {
    int step = 2 * SF.length();
    int bound = len - len % step;
    if (divide) {
      sumDivBf16(a, ao, b, bo, d, dO, bound, div);
    } else {
      sumBf16(a, ao, b, bo, d, dO, bound);
    }
    for (int i = bound; i < len; i++) {
      float r = HalfFloats.bf16ToFloat(a.getShort(ao + 2 * i))
          + HalfFloats.bf16ToFloat(b.getShort(bo + 2 * i));
      d.putShort(dO + 2 * i, HalfFloats.floatToBf16(divide ? r / div : r));
    }
  }

  /**
   * The vector part of {@link #sumBf16}, {@code len} a multiple of 2 x SF.length(): the
   * widening, the add and the rounding of {@link #f32ToBf16} written out, no helper taking or
   * returning a vector (see the n-input kernels below): with such helpers (widen the halves,
   * pack them) it boxed for good in 2 of 4 JVMs under load once the broadcasts were gone.
   */
  private static void sumBf16(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d, int dO,
      int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector y = IntVector.fromByteBuffer(SI, b, bo + 2 * i, NO);
      IntVector e = x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()
          .add(y.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()).viewAsIntegralLanes();
      IntVector od = x.and(HI16).viewAsFloatingLanes()
          .add(y.and(HI16).viewAsFloatingLanes()).viewAsIntegralLanes();
      IntVector eh = e.lanewise(VectorOperators.LSHR, 16);
      IntVector oh = od.lanewise(VectorOperators.LSHR, 16);
      IntVector er = e.add(R7FFF).add(eh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      er = er.lanewise(VectorOperators.XOR, er.lanewise(VectorOperators.XOR, eh.or(QUIET))
          .and(INF.sub(e.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      IntVector or = od.add(R7FFF).add(oh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      or = or.lanewise(VectorOperators.XOR, or.lanewise(VectorOperators.XOR, oh.or(QUIET))
          .and(INF.sub(od.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      er.or(or.lanewise(VectorOperators.LSHL, 16)).intoByteBuffer(d, dO + 2 * i, NO);
    }
  }

  /** As the above, divided: one method per loop keeps each small enough for C2 to inline. */
  private static void sumDivBf16(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer d,
      int dO, int len, float div) {
    FloatVector dv = FloatVector.broadcast(SF, div);
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector y = IntVector.fromByteBuffer(SI, b, bo + 2 * i, NO);
      IntVector e = x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()
          .add(y.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()).div(dv)
          .viewAsIntegralLanes();
      IntVector od = x.and(HI16).viewAsFloatingLanes()
          .add(y.and(HI16).viewAsFloatingLanes()).div(dv).viewAsIntegralLanes();
      IntVector eh = e.lanewise(VectorOperators.LSHR, 16);
      IntVector oh = od.lanewise(VectorOperators.LSHR, 16);
      IntVector er = e.add(R7FFF).add(eh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      er = er.lanewise(VectorOperators.XOR, er.lanewise(VectorOperators.XOR, eh.or(QUIET))
          .and(INF.sub(e.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      IntVector or = od.add(R7FFF).add(oh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      or = or.lanewise(VectorOperators.XOR, or.lanewise(VectorOperators.XOR, oh.or(QUIET))
          .and(INF.sub(od.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      er.or(or.lanewise(VectorOperators.LSHL, 16)).intoByteBuffer(d, dO + 2 * i, NO);
    }
  }

  /**
   * bf16 sum of more than two inputs, one pass an input: the first two are widened and added
   * into acc0 (f32, the widened layout), the middle ones widened and added into it one or two a
   * pass, and the last one added and rounded (and divided) into dst. Left to right in f32 and
   * rounded once, as HostReducer does.
   */
  private void sumBf16(ByteBuffer[] src, long[] so, int n, int off, ByteBuffer dst, int d,
      int len, boolean divide, float div) {
    int step = 2 * SF.length();
    int bound = len - len % step;
    int vb = SF.vectorByteSize();
    int k;
    if (n > 4) {
      wsum4Bf16(src[0], (int) so[0] + off, src[1], (int) so[1] + off, src[2], (int) so[2] + off,
          src[3], (int) so[3] + off, acc0, vb, bound);
      k = 4;
    } else {
      wsum2Bf16(src[0], (int) so[0] + off, src[1], (int) so[1] + off, acc0, vb, bound);
      k = 2;
    }
    while (k < n - 1) { // the middle inputs, up to three a pass; the last one rounds
      switch (Math.min(3, n - 1 - k)) {
        case 1 -> wacc1Bf16(acc0, vb, src[k], (int) so[k] + off, bound);
        case 2 -> wacc2Bf16(acc0, vb, src[k], (int) so[k] + off, src[k + 1],
            (int) so[k + 1] + off, bound);
        default -> wacc3Bf16(acc0, vb, src[k], (int) so[k] + off, src[k + 1],
            (int) so[k + 1] + off, src[k + 2], (int) so[k + 2] + off, bound);
      }
      k += Math.min(3, n - 1 - k);
    }
    if (divide) {
      wlastDivBf16(acc0, vb, src[k], (int) so[k] + off, dst, d, bound, div);
    } else {
      wlastBf16(acc0, vb, src[k], (int) so[k] + off, dst, d, bound);
    }
    for (int i = bound; i < len; i++) { // the tail, in natural order
      float r = 0f;
      for (int j = 0; j < n; j++) {
        float x = HalfFloats.bf16ToFloat(src[j].getShort((int) so[j] + off + 2 * i));
        r = j == 0 ? x : r + x;
      }
      dst.putShort(d + 2 * i, HalfFloats.floatToBf16(divide ? r / div : r));
    }
  }

  /** acc = widen(a) + widen(b) over {@code len} elements, a multiple of 2 x SF.length(). */
  private static void wsum2Bf16(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer acc,
      int vb, int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector y = IntVector.fromByteBuffer(SI, b, bo + 2 * i, NO);
      x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()
          .add(y.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i, NO);
      x.and(HI16).viewAsFloatingLanes()
          .add(y.and(HI16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i + vb, NO);
    }
  }

  /** acc = ((widen(a) + widen(b)) + widen(c)) + widen(e). */
  private static void wsum4Bf16(ByteBuffer a, int ao, ByteBuffer b, int bo, ByteBuffer c,
      int co, ByteBuffer e, int eo, ByteBuffer acc, int vb, int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector y = IntVector.fromByteBuffer(SI, b, bo + 2 * i, NO);
      IntVector z = IntVector.fromByteBuffer(SI, c, co + 2 * i, NO);
      IntVector w = IntVector.fromByteBuffer(SI, e, eo + 2 * i, NO);
      x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()
          .add(y.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .add(z.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .add(w.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i, NO);
      x.and(HI16).viewAsFloatingLanes()
          .add(y.and(HI16).viewAsFloatingLanes())
          .add(z.and(HI16).viewAsFloatingLanes())
          .add(w.and(HI16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i + vb, NO);
    }
  }

  /** acc = ((acc + widen(a)) + widen(b)) + widen(c). */
  private static void wacc3Bf16(ByteBuffer acc, int vb, ByteBuffer a, int ao, ByteBuffer b,
      int bo, ByteBuffer c, int co, int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector y = IntVector.fromByteBuffer(SI, b, bo + 2 * i, NO);
      IntVector z = IntVector.fromByteBuffer(SI, c, co + 2 * i, NO);
      FloatVector.fromByteBuffer(SF, acc, 4 * i, NO)
          .add(x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .add(y.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .add(z.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i, NO);
      FloatVector.fromByteBuffer(SF, acc, 4 * i + vb, NO)
          .add(x.and(HI16).viewAsFloatingLanes())
          .add(y.and(HI16).viewAsFloatingLanes())
          .add(z.and(HI16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i + vb, NO);
    }
  }

  /** acc = acc + widen(a). */
  private static void wacc1Bf16(ByteBuffer acc, int vb, ByteBuffer a, int ao, int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      FloatVector.fromByteBuffer(SF, acc, 4 * i, NO)
          .add(x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i, NO);
      FloatVector.fromByteBuffer(SF, acc, 4 * i + vb, NO)
          .add(x.and(HI16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i + vb, NO);
    }
  }

  /** acc = (acc + widen(a)) + widen(b). */
  private static void wacc2Bf16(ByteBuffer acc, int vb, ByteBuffer a, int ao, ByteBuffer b,
      int bo, int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector y = IntVector.fromByteBuffer(SI, b, bo + 2 * i, NO);
      FloatVector.fromByteBuffer(SF, acc, 4 * i, NO)
          .add(x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .add(y.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i, NO);
      FloatVector.fromByteBuffer(SF, acc, 4 * i + vb, NO)
          .add(x.and(HI16).viewAsFloatingLanes())
          .add(y.and(HI16).viewAsFloatingLanes())
          .intoByteBuffer(acc, 4 * i + vb, NO);
    }
  }

  /**
   * d = round(acc + widen(a)): the rounding of {@link #f32ToBf16} written out for the even and
   * the odd half, which are packed into one int lane again.
   */
  private static void wlastBf16(ByteBuffer acc, int vb, ByteBuffer a, int ao, ByteBuffer d,
      int dO, int len) {
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector e = FloatVector.fromByteBuffer(SF, acc, 4 * i, NO)
          .add(x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()).viewAsIntegralLanes();
      IntVector od = FloatVector.fromByteBuffer(SF, acc, 4 * i + vb, NO)
          .add(x.and(HI16).viewAsFloatingLanes()).viewAsIntegralLanes();
      IntVector eh = e.lanewise(VectorOperators.LSHR, 16);
      IntVector oh = od.lanewise(VectorOperators.LSHR, 16);
      IntVector er = e.add(R7FFF).add(eh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      er = er.lanewise(VectorOperators.XOR, er.lanewise(VectorOperators.XOR, eh.or(QUIET))
          .and(INF.sub(e.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      IntVector or = od.add(R7FFF).add(oh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      or = or.lanewise(VectorOperators.XOR, or.lanewise(VectorOperators.XOR, oh.or(QUIET))
          .and(INF.sub(od.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      er.or(or.lanewise(VectorOperators.LSHL, 16)).intoByteBuffer(d, dO + 2 * i, NO);
    }
  }

  /** d = round((acc + widen(a)) / div), as {@link #wlastBf16}. */
  private static void wlastDivBf16(ByteBuffer acc, int vb, ByteBuffer a, int ao, ByteBuffer d,
      int dO, int len, float div) {
    FloatVector dv = FloatVector.broadcast(SF, div);
    for (int i = 0; i < len; i += 2 * SF.length()) {
      IntVector x = IntVector.fromByteBuffer(SI, a, ao + 2 * i, NO);
      IntVector e = FloatVector.fromByteBuffer(SF, acc, 4 * i, NO)
          .add(x.lanewise(VectorOperators.LSHL, 16).viewAsFloatingLanes()).div(dv)
          .viewAsIntegralLanes();
      IntVector od = FloatVector.fromByteBuffer(SF, acc, 4 * i + vb, NO)
          .add(x.and(HI16).viewAsFloatingLanes()).div(dv).viewAsIntegralLanes();
      IntVector eh = e.lanewise(VectorOperators.LSHR, 16);
      IntVector oh = od.lanewise(VectorOperators.LSHR, 16);
      IntVector er = e.add(R7FFF).add(eh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      er = er.lanewise(VectorOperators.XOR, er.lanewise(VectorOperators.XOR, eh.or(QUIET))
          .and(INF.sub(e.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      IntVector or = od.add(R7FFF).add(oh.and(ONE)).lanewise(VectorOperators.LSHR, 16);
      or = or.lanewise(VectorOperators.XOR, or.lanewise(VectorOperators.XOR, oh.or(QUIET))
          .and(INF.sub(od.and(ABS)).lanewise(VectorOperators.ASHR, 31)));
      er.or(or.lanewise(VectorOperators.LSHL, 16)).intoByteBuffer(d, dO + 2 * i, NO);
    }
  }

  /**
   * f32 bits to bf16 bits in the low 16 of each lane: round to nearest even, NaN quiet. The NaN
   * lanes are picked with integer arithmetic, not a compare and blend: {@code 0x7F800000 - |x|}
   * is negative exactly for NaN, and its sign shifted across the lane selects. The mask form
   * (a {@code VectorMask}) left the bf16 kernels boxing for good in some JVMs on JDK 17 under
   * load; this form has no mask to box.
   */
  private static IntVector f32ToBf16(IntVector bits) {
    IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
    IntVector rounded = bits.add(R7FFF).add(high.and(ONE)).lanewise(VectorOperators.LSHR, 16);
    IntVector nan = INF.sub(bits.and(ABS))
        .lanewise(VectorOperators.ASHR, 31);
    return rounded.lanewise(VectorOperators.XOR,
        rounded.lanewise(VectorOperators.XOR, high.or(QUIET)).and(nan));
  }

  // ---- loads ------------------------------------------------------------------------------

  private static FloatVector lf(ByteBuffer b, int byteOffset) {
    return FloatVector.fromByteBuffer(SF, b, byteOffset, NO);
  }

  private static DoubleVector ld(ByteBuffer b, int byteOffset) {
    return DoubleVector.fromByteBuffer(SD, b, byteOffset, NO);
  }

  private static IntVector li(ByteBuffer b, int byteOffset) {
    return IntVector.fromByteBuffer(SI, b, byteOffset, NO);
  }

  private static LongVector ll(ByteBuffer b, int byteOffset) {
    return LongVector.fromByteBuffer(SL, b, byteOffset, NO);
  }
}
