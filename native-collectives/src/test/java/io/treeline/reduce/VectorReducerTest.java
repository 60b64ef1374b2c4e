package io.treeline.reduce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.testing.Elements;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class VectorReducerTest {
  /** Around the vector length (8 f32 lanes on AVX2), the block (2048) and odd primes. */
  private static final long[] SIZES = {0, 1, 3, 7, 8, 9, 31, 2047, 2048, 2049, 4099, 6151};

  @Test
  void createPicksTheVectorReducerWhenTheModuleIsLoaded() {
    assertTrue(Reducer.vectorAvailable(), "surefire passes --add-modules=jdk.incubator.vector");
    assertInstanceOf(VectorReducer.class, Reducer.create());
  }

  @Test
  void aJvmWithoutTheModuleFallsBackToTheScalarReducer() throws IOException,
      InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        PrintReducer.class.getName()).redirectErrorStream(true).start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "child JVM did not finish");
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertEquals(0, p.exitValue(), out);
    assertEquals(HostReducer.class.getName() + " 6.0", out);
  }

  /** Main of the child JVM: which reducer create() gives, and that it reduces. */
  static final class PrintReducer {
    public static void main(String[] args) {
      Reducer r = Reducer.create();
      ByteBuffer a = Elements.direct(1, DataType.F32).putFloat(0, 2f);
      ByteBuffer b = Elements.direct(1, DataType.F32).putFloat(0, 4f);
      r.reduce2(DataType.F32, ReduceOp.SUM, a, 0, b, 0, a, 0, 1, true, 1);
      System.out.println(r.getClass().getName() + " " + a.getFloat(0));
    }
  }

  @Test
  void everyTypeAndOpMatchesTheFloat64ReferenceAndTheScalarReducerBitForBit() {
    VectorReducer vector = new VectorReducer();
    HostReducer scalar = new HostReducer();
    Random rnd = new Random(7);
    for (DataType t : DataType.values()) {
      for (ReduceOp op : ReduceOp.values()) {
        for (long count : SIZES) {
          for (int n : new int[] {1, 2, 3, 8}) {
            double[][] in = new double[n][];
            ByteBuffer[] bufs = new ByteBuffer[n];
            long[] offs = new long[n];
            for (int k = 0; k < n; k++) {
              in[k] = Elements.random(rnd, count, t, op);
              // every input misaligned differently (slice by k bytes) and at an element offset
              bufs[k] = misaligned(count + k, t, k % 4);
              offs[k] = (long) k * t.size();
              for (int i = 0; i < count; i++) {
                Elements.put(bufs[k], i + k, in[k][i], t);
              }
            }
            ByteBuffer out = misaligned(count + 1, t, 3);
            ByteBuffer ref = Elements.direct(count + 1, t);
            vector.reduce(t, op, bufs, offs, n, out, t.size(), count, true, n);
            scalar.reduce(t, op, bufs, offs, n, ref, t.size(), count, true, n);
            for (int i = 0; i < count; i++) {
              String what = t + " " + op + " n=" + n + " count=" + count + " i=" + i;
              if (t.isFloating()) {
                double want = Elements.reference(in, i, t, op);
                double got = Elements.get(out, i + 1, t);
                assertTrue(Math.abs(got - want) <= Elements.tolerance(in, i, t, op),
                    what + ": " + got + " vs " + want);
              } else {
                assertEquals(Elements.referenceLong(in, i, t, op),
                    Elements.getLong(out, i + 1, t), what);
              }
              assertEquals(bits(ref, i + 1, t), bits(out, i + 1, t),
                  what + ": bits differ from HostReducer's");
            }
          }
        }
      }
    }
  }

  @Test
  void inPlaceOutputEqualsAnInput() {
    VectorReducer vector = new VectorReducer();
    Random rnd = new Random(3);
    int count = 5003;
    for (DataType t : new DataType[] {DataType.F32, DataType.BF16, DataType.F64}) {
      double[][] in = new double[3][];
      ByteBuffer[] bufs = new ByteBuffer[3];
      for (int k = 0; k < 3; k++) {
        in[k] = Elements.random(rnd, count, t, ReduceOp.SUM);
        bufs[k] = Elements.direct(count, t);
        for (int i = 0; i < count; i++) {
          Elements.put(bufs[k], i, in[k][i], t);
        }
      }
      vector.reduce(t, ReduceOp.SUM, bufs, new long[3], 3, bufs[1], 0, count, false, 3);
      for (int i = 0; i < count; i++) {
        double want = Elements.reference(in, i, t, ReduceOp.SUM);
        assertTrue(Math.abs(Elements.get(bufs[1], i, t) - want)
            <= Elements.tolerance(in, i, t, ReduceOp.SUM), t + " i=" + i);
      }
    }
  }

  /**
   * The vectorised bf16 conversions against HalfFloats' scalar ones on every bit pattern against
   * random partners (NaNs, infinities, subnormals, values that overflow when rounded included):
   * the two-input sum in registers, (a + b) and (a + b) / 3, and the three-input scratch path,
   * max(a, b, a) and (a + b + a) / 3, must give the scalar reducer's bits.
   */
  @Test
  void bf16ConversionsRoundLikeHalfFloatsOnEveryBitPattern() {
    VectorReducer vector = new VectorReducer();
    HostReducer scalar = new HostReducer();
    Random rnd = new Random(11);
    DataType t = DataType.BF16;
    int count = 1 << 16;
    ByteBuffer a = Elements.direct(count, t);
    ByteBuffer b = Elements.direct(count, t);
    for (int i = 0; i < count; i++) {
      a.putShort(2 * i, (short) i); // every bit pattern once
      b.putShort(2 * i, (short) rnd.nextInt());
    }
    ByteBuffer[] three = {a, b, a};
    for (ReduceOp op : new ReduceOp[] {ReduceOp.AVG, ReduceOp.MAX}) {
      for (int divisor : new int[] {1, 3}) {
        for (int n : new int[] {2, 3}) {
          ByteBuffer got = Elements.direct(count, t);
          ByteBuffer want = Elements.direct(count, t);
          vector.reduce(t, op, three, new long[3], n, got, 0, count, true, divisor);
          scalar.reduce(t, op, three, new long[3], n, want, 0, count, true, divisor);
          for (int i = 0; i < count; i++) {
            if (isNan(want.getShort(2 * i)) && isNan(got.getShort(2 * i))) {
              continue; // which NaN operand x86 returns depends on the JIT's operand order
            }
            assertEquals(want.getShort(2 * i), got.getShort(2 * i), op + " n=" + n + " "
                + Integer.toHexString(i) + " and " + Integer.toHexString(b.getShort(2 * i)
                & 0xFFFF) + " / " + divisor);
          }
        }
      }
    }
  }

  @Test
  void theHotPathAllocatesNothing() {
    Allocations.assertReduceAllocatesNothing(new VectorReducer());
  }

  private static boolean isNan(short bf16) {
    return Float.isNaN(io.treeline.core.HalfFloats.bf16ToFloat(bf16));
  }

  /** The raw bits of element i. */
  private static long bits(ByteBuffer b, int i, DataType t) {
    return switch (t.size()) {
      case 1 -> b.get(i);
      case 2 -> b.getShort(2 * i);
      case 4 -> b.getInt(4 * i);
      default -> b.getLong(8 * i);
    };
  }

  /** A direct buffer of {@code count} elements whose first byte is {@code shift} bytes off. */
  private static ByteBuffer misaligned(long count, DataType t, int shift) {
    ByteBuffer raw = ByteBuffer.allocateDirect(Math.toIntExact(count * t.size() + shift + 1));
    return raw.position(shift).slice().order(ByteOrder.nativeOrder());
  }
}
