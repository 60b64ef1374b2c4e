package io.treeline.bootstrap;

import java.time.Duration;

/**
 * A group of some of a bootstrap's ranks, seen as a bootstrap of its own: rank i of the group is
 * {@code members[i]} of the parent. Every rank of the parent must make the same calls at the
 * same time (each group's all-gather is one all-gather of the parent, from which a group keeps
 * its members' entries), which is what happens when every rank sets up a communicator over its
 * own group at once: the GPU path's groups across nodes (the ranks with the same local index on
 * every node).
 */
public final class SubsetBootstrap implements Bootstrap {
  private final Bootstrap parent;
  private final int[] members;
  private final int rank;

  /** {@code members}: parent ranks in group order; the calling rank must be one of them. */
  public SubsetBootstrap(Bootstrap parent, int[] members) {
    this.parent = parent;
    this.members = members.clone();
    int r = -1;
    for (int i = 0; i < members.length; i++) {
      if (members[i] == parent.rank()) {
        r = i;
      }
    }
    if (r < 0) {
      throw new IllegalArgumentException("rank " + parent.rank() + " is not in the group "
          + java.util.Arrays.toString(members));
    }
    this.rank = r;
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return members.length;
  }

  @Override
  public byte[][] allGather(byte[] mine, Duration timeout) {
    byte[][] all = parent.allGather(mine, timeout);
    byte[][] ours = new byte[members.length][];
    for (int i = 0; i < members.length; i++) {
      ours[i] = all[members[i]];
    }
    return ours;
  }

  @Override
  public String nodeId() {
    return parent.nodeId();
  }

  @Override
  public byte[] secret() {
    return parent.secret();
  }

  /** The parent stays open: it belongs to whoever made it. */
  @Override
  public void close() {
  }
}
