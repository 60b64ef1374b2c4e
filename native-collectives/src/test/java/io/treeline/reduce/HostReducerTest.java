package io.treeline.reduce;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.core.HalfFloats;
import io.treeline.core.ReduceOp;
import io.treeline.testing.Elements;
import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

class HostReducerTest {
  private static final long[] SIZES = {0, 1, 2, 7, 13, 1023, 1024, 1025, 4099};

  @Test
  void everyTypeAndOpMatchesTheFloat64ReferenceForOneToNineInputs() {
    HostReducer reducer = new HostReducer();
    Random rnd = new Random(42);
    for (DataType t : DataType.values()) {
      for (ReduceOp op : ReduceOp.values()) {
        for (long count : SIZES) {
          for (int n = 1; n <= 9; n += 2) {
            double[][] in = new double[n][];
            ByteBuffer[] bufs = new ByteBuffer[n];
            long[] offs = new long[n];
            for (int k = 0; k < n; k++) {
              in[k] = Elements.random(rnd, count, t, op);
              // inputs at different offsets inside bigger buffers: offsets are honoured
              offs[k] = (long) k * t.size();
              bufs[k] = Elements.direct(count + k, t);
              for (int i = 0; i < count; i++) {
                Elements.put(bufs[k], i + k, in[k][i], t);
              }
            }
            ByteBuffer out = Elements.direct(count, t);
            reducer.reduce(t, op, bufs, offs, n, out, 0, count, true, n);
            for (int i = 0; i < count; i++) {
              String what = t + " " + op + " n=" + n + " count=" + count + " i=" + i;
              if (t.isFloating()) {
                double ref = Elements.reference(in, i, t, op);
                double got = Elements.get(out, i, t);
                double tol = Elements.tolerance(in, i, t, op);
                assertTrue(Math.abs(got - ref) <= tol, what + ": " + got + " vs " + ref);
              } else {
                assertEquals(Elements.referenceLong(in, i, t, op),
                    Elements.getLong(out, i, t), what);
              }
            }
          }
        }
      }
    }
  }

  @Test
  void halfTypesAccumulateInF32AndRoundOnce() {
    // 2048 + 1 + 1 in f16: rounding after every add loses both ones (2049 is not a half);
    // accumulating in f32 gives 2050, which is
    HostReducer reducer = new HostReducer();
    ByteBuffer[] in = {Elements.direct(1, DataType.F16), Elements.direct(1, DataType.F16),
        Elements.direct(1, DataType.F16)};
    in[0].putShort(0, HalfFloats.floatToHalf(2048f));
    in[1].putShort(0, HalfFloats.floatToHalf(1f));
    in[2].putShort(0, HalfFloats.floatToHalf(1f));
    ByteBuffer out = Elements.direct(1, DataType.F16);
    reducer.reduce(DataType.F16, ReduceOp.SUM, in, new long[3], 3, out, 0, 1, true, 3);
    assertEquals(2050f, HalfFloats.halfToFloat(out.getShort(0)));
  }

  @Test
  void integerAvgDividesTheWrappedSumLikeNccl() {
    HostReducer reducer = new HostReducer();
    ByteBuffer a = Elements.direct(1, DataType.U8);
    ByteBuffer b = Elements.direct(1, DataType.U8);
    a.put(0, (byte) 200);
    b.put(0, (byte) 100);
    ByteBuffer out = Elements.direct(1, DataType.U8);
    reducer.reduce2(DataType.U8, ReduceOp.AVG, a, 0, b, 0, out, 0, 1, true, 2);
    assertEquals((300 & 0xFF) / 2, out.get(0) & 0xFF);
  }

  @Test
  void refusesHeapBuffersAndOutOfRangeRegions() {
    HostReducer reducer = new HostReducer();
    ByteBuffer heap = ByteBuffer.allocate(64).order(java.nio.ByteOrder.nativeOrder());
    ByteBuffer direct = Elements.direct(16, DataType.F32);
    assertThrows(IllegalArgumentException.class, () -> reducer.copy(DataType.F32, ReduceOp.SUM,
        heap, 0, direct, 0, 4, false, 1));
    assertThrows(IndexOutOfBoundsException.class, () -> reducer.copy(DataType.F32,
        ReduceOp.SUM, direct, 4, direct, 0, 16, false, 1));
  }

  @Test
  void theHotPathAllocatesNothing() {
    Allocations.assertReduceAllocatesNothing(new HostReducer());
  }
}
