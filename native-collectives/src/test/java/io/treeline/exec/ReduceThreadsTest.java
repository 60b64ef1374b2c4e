package io.treeline.exec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.reduce.HostReducer;
import io.treeline.reduce.Reducer;
import io.treeline.testing.Elements;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ReduceThreadsTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);

  /** Sizes below and above the hand-off threshold, primes and an odd tail. */
  private static long[] sizes(DataType t) {
    long part = ReduceThreads.MIN_PART_BYTES / t.size();
    return new long[] {0, 1, 7, 4099, part - 1, 2 * part + 13, 3 * part + 1, 7 * part + 127,
        262_147};
  }

  @Test
  void sharedReducesGiveTheBitsOfOneThreadAndMatchTheFloat64Reference() {
    Random rnd = new Random(11);
    Reducer one = new HostReducer();
    try (ReduceThreads threads = new ReduceThreads(0, 4, 8, new HostReducer(), HostReducer::new)) {
      // the scalar reducer: the split is what is tested here, and heavy multi-threaded use of
      // VectorReducer's kernels leaves them allocating for VectorReducerTest later in the fork
      // (a JIT effect of the reducer; docs/BENCHMARKS.md, "Large messages")
      for (DataType t : new DataType[] {DataType.F32, DataType.BF16, DataType.F64,
          DataType.I32}) {
        for (ReduceOp op : new ReduceOp[] {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX}) {
          for (long count : sizes(t)) {
            for (int n : new int[] {1, 2, 4}) {
              check(rnd, one, threads, t, op, count, n);
            }
          }
        }
      }
    }
  }

  private static void check(Random rnd, Reducer one, ReduceThreads threads, DataType t,
      ReduceOp op, long count, int n) {
    long base = 3; // every buffer read and written from an element offset, as plans do
    double[][] in = new double[n][];
    ByteBuffer[] bufs = new ByteBuffer[n];
    long[] offs = new long[n];
    for (int k = 0; k < n; k++) {
      in[k] = Elements.random(rnd, count, t, op);
      bufs[k] = Elements.direct(count + base, t);
      offs[k] = base * t.size();
      for (int i = 0; i < count; i++) {
        Elements.put(bufs[k], (int) (i + base), in[k][i], t);
      }
    }
    ByteBuffer out = Elements.direct(count + base, t);
    ByteBuffer ref = Elements.direct(count + base, t);
    threads.reduce(t, op, bufs, base * t.size(), n, out, count, true, n,
        System.nanoTime() + TIMEOUT.toNanos(), TIMEOUT);
    if (n == 1) {
      one.copy(t, op, bufs[0], offs[0], ref, offs[0], count, true, n);
    } else {
      one.reduce(t, op, bufs, offs, n, ref, base * t.size(), count, true, n);
    }
    String what = t + " " + op + " n=" + n + " count=" + count;
    assertEquals(ref.position(0).limit(ref.capacity()), out.position(0).limit(out.capacity()),
        what + ": bits differ from one thread's");
    for (int i = 0; i < count; i += 1 + (int) (count / 512)) {
      int at = (int) (i + base);
      if (t.isFloating()) {
        double want = Elements.reference(in, i, t, op);
        double got = Elements.get(out, at, t);
        assertTrue(Math.abs(got - want) <= Elements.tolerance(in, i, t, op),
            what + " i=" + i + ": " + got + " vs " + want);
      } else {
        assertEquals(Elements.referenceLong(in, i, t, op), Elements.getLong(out, at, t),
            what + " i=" + i);
      }
    }
  }

  @Test
  void sharedCopiesMoveEveryByteBetweenOffsetsOfTheirOwn() {
    Random rnd = new Random(5);
    try (ReduceThreads threads = new ReduceThreads(0, 3, 4, new HostReducer(), HostReducer::new)) {
      for (long count : sizes(DataType.F32)) {
        ByteBuffer src = Elements.direct(count + 5, DataType.F32);
        ByteBuffer dst = Elements.direct(count + 9, DataType.F32);
        byte[] data = new byte[(int) count * 4];
        rnd.nextBytes(data);
        src.put(20, data);
        threads.copy(DataType.F32, src, 20, dst, 4, count,
            System.nanoTime() + TIMEOUT.toNanos(), TIMEOUT);
        byte[] got = new byte[data.length];
        dst.get(4, got);
        assertTrue(java.util.Arrays.equals(data, got), "count " + count);
        assertEquals(0, dst.getInt(0), "count " + count + ": wrote before the destination");
        assertEquals(0, dst.getInt(4 + data.length), "count " + count + ": wrote past it");
      }
    }
  }

  @Test
  void helpersParkBetweenCallsAndStopOnClose() throws InterruptedException {
    List<Thread> before = helpers();
    ReduceThreads threads = new ReduceThreads(7, 3, 4, new HostReducer(), HostReducer::new);
    ByteBuffer a = Elements.direct(1 << 20, DataType.F32);
    ByteBuffer b = Elements.direct(1 << 20, DataType.F32);
    threads.copy(DataType.F32, a, 0, b, 0, 1 << 20, System.nanoTime() + TIMEOUT.toNanos(),
        TIMEOUT);
    List<Thread> mine = helpers();
    mine.removeAll(before);
    assertEquals(2, mine.size(), "two helpers besides the caller: " + mine);
    long until = System.nanoTime() + 5_000_000_000L;
    for (Thread t : mine) { // after the spin budget, parked: no core taken between calls
      while (t.getState() != Thread.State.WAITING && System.nanoTime() < until) {
        Thread.sleep(1);
      }
      assertEquals(Thread.State.WAITING, t.getState(), t.getName());
    }
    threads.close();
    for (Thread t : mine) {
      t.join(5000);
      assertFalse(t.isAlive(), t.getName() + " still runs after close");
    }
    threads.close(); // twice is fine
  }

  @Test
  void aFailingPartIsThrownOnTheCallersThread() {
    try (ReduceThreads threads = new ReduceThreads(0, 4, 4, new HostReducer(), HostReducer::new)) {
      long count = 4 * ReduceThreads.MIN_PART_BYTES / 4;
      ByteBuffer[] src = {Elements.direct(count, DataType.F32),
          Elements.direct(count / 2, DataType.F32)}; // too short: a helper's part overruns it
      ByteBuffer out = Elements.direct(count, DataType.F32);
      assertThrows(IndexOutOfBoundsException.class, () -> threads.reduce(DataType.F32,
          ReduceOp.SUM, src, 0, 2, out, count, true, 2, System.nanoTime() + TIMEOUT.toNanos(),
          TIMEOUT));
      // and the threads still work afterwards
      check(new Random(1), new HostReducer(), threads, DataType.F32, ReduceOp.SUM, 3 * count + 1,
          2);
    }
  }

  @Test
  void threadsPerRankDivideTheCores() {
    int cores = Runtime.getRuntime().availableProcessors();
    assertEquals(Math.max(1, Math.min(ReduceThreads.MAX_THREADS, cores)),
        ReduceThreads.forNode(1));
    assertEquals(1, ReduceThreads.forNode(cores + 1));
    assertThrows(IllegalArgumentException.class, () -> new ReduceThreads(0, 0, 2,
        Reducer.create()));
  }

  private static List<Thread> helpers() {
    List<Thread> out = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("treeline-reduce-7-")) {
        out.add(t);
      }
    }
    return out;
  }
}
