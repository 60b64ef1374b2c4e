package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The tensor-map cache without a GPU: the encoder here writes the arguments it was given into
 * the map, so a cached map can be checked against the matrix it must describe. (The driver's
 * encoder and the kernels reading the maps are checked on the GPU: TrainingKernelsTest.)
 */
class TensorMapsTest {
  /** Records every call and writes its arguments into the map's first 28 bytes. */
  private static final class Writing implements TensorMaps.Encoder {
    final List<long[]> calls = new ArrayList<>();
    int fail = -1;

    @Override
    public int encode(long address, int rows, int cols, int ld, int boxRows, byte[] out) {
      calls.add(new long[] {address, rows, cols, ld, boxRows});
      ByteBuffer.wrap(out).putLong(address).putInt(rows).putInt(cols).putInt(ld).putInt(boxRows)
          .putInt(calls.size());
      return calls.size() - 1 == fail ? 1 : 0;
    }
  }

  private static byte[] expected(long address, int rows, int cols, int ld, int box, int call) {
    byte[] m = new byte[TensorMaps.BYTES];
    ByteBuffer.wrap(m).putLong(address).putInt(rows).putInt(cols).putInt(ld).putInt(box)
        .putInt(call);
    return m;
  }

  @Test
  void aMatrixIsEncodedOnceAndItsMapServedFromTheCacheAfterwards() {
    Writing e = new Writing();
    TensorMaps maps = new TensorMaps(e);
    byte[] a = maps.map(0x7f0000001000L, 512, 784, 784, 128);
    byte[] b = maps.map(0x7f0000100000L, 784, 4096, 4096, 32);
    assertSame(a, maps.map(0x7f0000001000L, 512, 784, 784, 128));
    assertSame(b, maps.map(0x7f0000100000L, 784, 4096, 4096, 32));
    assertEquals(2, e.calls.size());
    assertArrayEquals(expected(0x7f0000001000L, 512, 784, 784, 128, 1), a);
    assertArrayEquals(expected(0x7f0000100000L, 784, 4096, 4096, 32, 2), b);
    // any field that differs is another map: address, rows, columns, stride, box
    assertNotSame(a, maps.map(0x7f0000001010L, 512, 784, 784, 128));
    assertNotSame(a, maps.map(0x7f0000001000L, 511, 784, 784, 128));
    assertNotSame(a, maps.map(0x7f0000001000L, 512, 783, 784, 128));
    assertNotSame(a, maps.map(0x7f0000001000L, 512, 784, 788, 128));
    assertNotSame(a, maps.map(0x7f0000001000L, 512, 784, 784, 32));
    assertEquals(7, e.calls.size());
    assertEquals(7, maps.size());
  }

  @Test
  void theOldestMapMakesRoomAndEveryServedMapDescribesItsMatrix() {
    Writing e = new Writing();
    TensorMaps maps = new TensorMaps(e);
    int n = TensorMaps.CAPACITY + 9;
    for (int i = 0; i < n; i++) {
      maps.map(0x1000L * (i + 1), 64 + i, 32, 32, 128);
    }
    assertEquals(TensorMaps.CAPACITY, maps.size());
    assertEquals(n, e.calls.size());
    // the newest CAPACITY are cached; the first 9 were replaced and are encoded again
    for (int i = n - TensorMaps.CAPACITY; i < n; i++) {
      byte[] m = maps.map(0x1000L * (i + 1), 64 + i, 32, 32, 128);
      assertArrayEquals(expected(0x1000L * (i + 1), 64 + i, 32, 32, 128, i + 1), m, "map " + i);
    }
    assertEquals(n, e.calls.size());
    byte[] again = maps.map(0x1000L, 64, 32, 32, 128);
    assertEquals(n + 1, e.calls.size());
    assertArrayEquals(expected(0x1000L, 64, 32, 32, 128, n + 1), again);
  }

  @Test
  void aRefusedMapNamesTheMatrixAndTheErrorAndLeavesTheCachedOnesIntact() {
    Writing e = new Writing();
    TensorMaps maps = new TensorMaps(e);
    byte[] a = maps.map(0x2000L, 10, 20, 20, 32);
    byte[] copy = a.clone();
    e.fail = 1;
    IllegalStateException x = assertThrows(IllegalStateException.class,
        () -> maps.map(0x3000L, 13, 17, 20, 128));
    assertTrue(x.getMessage().contains("CUDA error 1"), x.getMessage());
    assertTrue(x.getMessage().contains("13 x 17 FP32 matrix at 0x3000"), x.getMessage());
    assertTrue(x.getMessage().contains("leading dimension 20"), x.getMessage());
    assertTrue(x.getMessage().contains("box 32 x 128"), x.getMessage());
    assertEquals(1, maps.size());
    assertSame(a, maps.map(0x2000L, 10, 20, 20, 32));
    assertArrayEquals(copy, a);
  }

  @Test
  void withoutADriverTheEncoderIsAbsentAndSaysWhy() {
    if (TensorMaps.encoder() != null) {
      return; // a CUDA driver is mapped here: TrainingKernelsTest uses the real encoder
    }
    String why = TensorMaps.absent();
    assertNotNull(why);
    // the build's test JVMs add the module and native access: what is missing is the driver
    assertTrue(why.contains("libcuda") || why.contains("cuTensorMapEncodeTiled"), why);
  }
}
