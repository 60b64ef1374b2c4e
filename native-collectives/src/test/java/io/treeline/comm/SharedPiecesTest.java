package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.CollectiveException;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The pieces the host and the GPU communicator share: the set-up record, the call state, the
 * plan cache.
 */
class SharedPiecesTest {
  @Test
  void peerInfoRoundTripsAndRefusesAnotherVersionByName() throws IOException {
    PeerInfo p = new PeerInfo(3, "node-a", 4242, new byte[] {1, 2, 3}, new byte[0]);
    PeerInfo q = PeerInfo.decode(p.encode());
    assertEquals(3, q.rank());
    assertEquals("node-a", q.node());
    assertEquals(4242, q.pid());
    assertArrayEquals(new byte[] {1, 2, 3}, q.memory());
    assertArrayEquals(new byte[0], q.network());

    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(b)) {
      d.writeInt(2); // the host-only record of the last jar
      d.writeInt(0);
    }
    String m = assertThrows(UncheckedIOException.class, () -> PeerInfo.decode(b.toByteArray()))
        .getMessage();
    assertTrue(m.contains("version 2") && m.contains("reads 3"), m);

    byte[] longer = java.util.Arrays.copyOf(p.encode(), p.encode().length + 1);
    assertThrows(UncheckedIOException.class, () -> PeerInfo.decode(longer));
  }

  @Test
  void callStateTellsThePeersOnceAndNamesTheFirstCause() {
    List<String> told = new ArrayList<>();
    CallState s = new CallState(5, 2, "collective", told::add);
    s.check("allreduce");
    assertTrue(s.fail(new IllegalStateException("first")));
    assertFalse(s.fail(new IllegalStateException("second")));
    assertEquals(List.of("rank 2 failed: first"), told);
    CollectiveException e = assertThrows(CollectiveException.class, () -> s.check("allreduce"));
    assertTrue(e.getMessage().contains("rank 5") && e.getMessage().contains("failed earlier")
        && e.getMessage().contains("first"), e.getMessage());
    s.requireOpen("allreduce"); // broken is not closed
    assertTrue(s.close());
    assertFalse(s.close());
    e = assertThrows(CollectiveException.class, () -> s.requireOpen("broadcast"));
    assertTrue(e.getMessage().contains("the communicator is closed"), e.getMessage());
  }

  @Test
  void planCacheHitsAndStartsOverWhenFull() {
    PlanCache<Object> c = new PlanCache<>();
    Object first = new Object();
    assertSame(first, c.put("k0", first));
    assertSame(first, c.get("k0"));
    for (int i = 1; i <= PlanCache.MAX_SHAPES + 1; i++) {
      c.put("k" + i, new Object());
    }
    assertNull(c.get("k0"), "a full cache starts over instead of growing");
    assertTrue(c.get("k" + (PlanCache.MAX_SHAPES + 1)) != null);
  }
}
