package io.treeline.reduce;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.testing.Elements;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/** The allocation-free property of a {@link Reducer}, measured with ThreadMXBean. */
final class Allocations {
  private Allocations() {
  }

  /**
   * Every type x op, 2, 4 and 8 inputs, AVG finished: after warm-up no call allocates a byte.
   */
  static void assertReduceAllocatesNothing(Reducer reducer) {
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    int n = 8;
    long count = 100_003;
    ByteBuffer[] in = new ByteBuffer[n];
    long[] offs = new long[n];
    for (int k = 0; k < n; k++) {
      in[k] = Elements.direct(count, DataType.BF16);
    }
    ByteBuffer out = Elements.direct(count, DataType.BF16);
    DataType[] types = DataType.values(); // values() clones: keep it out of the measurement
    ReduceOp[] ops = ReduceOp.values();
    // Until C2 has compiled a kernel, its Vector API calls run in the interpreter or C1 and box
    // every vector; on a busy 2-core machine the compile queue can take many seconds. So: run
    // every type x op until one round allocates nothing, within a generous bound.
    long tid = Thread.currentThread().getId();
    StringBuilder culprits = new StringBuilder(); // built outside the measured calls
    long giveUp = System.nanoTime()
        + TimeUnit.SECONDS.toNanos(Long.getLong("treeline.alloc.seconds", 120));
    do {
      culprits.setLength(0);
      for (DataType t : types) {
        for (ReduceOp op : ops) {
          long before = mx.getThreadAllocatedBytes(tid);
          for (int i = 0; i < 20; i++) {
            reducer.reduce(t, op, in, offs, n, out, 0, count / t.size(), true, n);
            reducer.reduce(t, op, in, offs, 4, out, 0, count / t.size(), true, 4);
            reducer.reduce(t, op, in, offs, 2, out, 0, count / t.size(), true, 2);
          }
          long allocated = mx.getThreadAllocatedBytes(tid) - before;
          // 60 reduce calls; one boxed vector per call would exceed this
          if (allocated >= 256) {
            culprits.append(' ').append(t).append('/').append(op).append(": ").append(allocated);
          }
        }
      }
    } while (culprits.length() > 0 && System.nanoTime() < giveUp);
    assertEquals("", culprits.toString(), "reduce allocated bytes");
  }
}
