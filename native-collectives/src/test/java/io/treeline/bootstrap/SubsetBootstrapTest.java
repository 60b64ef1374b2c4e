package io.treeline.bootstrap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.treeline.testing.Ranks;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Groups of a bootstrap's ranks (the GPU path's groups across nodes) as bootstraps. */
class SubsetBootstrapTest {
  @Test
  void twoInterleavedGroupsEachSeeOnlyTheirMembersInGroupOrder() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0)) {
      port = s.getLocalPort();
    }
    byte[] secret = "subset-test".getBytes(StandardCharsets.UTF_8);
    String[][] seen = new String[4][];
    int[][] groups = {{0, 2}, {1, 3}};
    Ranks.run(4, 30_000, r -> {
      try (TcpStoreBootstrap parent = TcpStoreBootstrap.create(r, 4, "127.0.0.1", port, secret,
          Duration.ofSeconds(20))) {
        SubsetBootstrap g = new SubsetBootstrap(parent, groups[r % 2]);
        assertEquals(r / 2, g.rank());
        assertEquals(2, g.size());
        byte[][] all = g.allGather(("from " + r).getBytes(StandardCharsets.UTF_8),
            Duration.ofSeconds(20));
        seen[r] = new String[] {new String(all[0], StandardCharsets.UTF_8),
            new String(all[1], StandardCharsets.UTF_8)};
        g.barrier(Duration.ofSeconds(20));
        assertArrayEquals(parent.secret(), g.secret());
      }
    });
    assertArrayEquals(new String[] {"from 0", "from 2"}, seen[0]);
    assertArrayEquals(new String[] {"from 0", "from 2"}, seen[2]);
    assertArrayEquals(new String[] {"from 1", "from 3"}, seen[1]);
    assertArrayEquals(new String[] {"from 1", "from 3"}, seen[3]);
  }

  @Test
  void aRankOutsideTheGroupIsRefused() {
    Bootstrap fake = new Bootstrap() {
      @Override
      public int rank() {
        return 5;
      }

      @Override
      public int size() {
        return 8;
      }

      @Override
      public byte[][] allGather(byte[] mine, Duration timeout) {
        throw new AssertionError();
      }

      @Override
      public byte[] secret() {
        return new byte[0];
      }

      @Override
      public void close() {
      }
    };
    assertThrows(IllegalArgumentException.class, () -> new SubsetBootstrap(fake, new int[] {0, 4}));
  }
}
