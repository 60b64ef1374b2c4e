package io.treeline.plan;

import io.treeline.core.DataType;
import java.util.List;

/**
 * Large messages inside one node: reduce-scatter by reading peers' slices in place (rank i
 * reduces slice i of every local INPUT), then all-gather by reading peers' reduced slices from
 * their OUTPUT. Every byte is read n times in all instead of n^2 times as in {@link OneShot}.
 *
 * <p>With {@link PlanConfig#peerChunkBytes()} set the two phases are pipelined: each slice is
 * cut into K chunks (K = slice / peerChunkBytes, 2..{@link #MAX_CHUNKS}), rank i signals phase
 * 2 + c when chunk c of its slice is final, and copies chunk c - 1 of every peer's slice while
 * the peers still reduce chunk c:
 * <pre>
 *   signal 1, wait all 1                       (every INPUT ready)
 *   reduce chunk 0 of my slice; signal 2
 *   reduce chunk 1; signal 3; for each peer p: wait p 2, copy chunk 0 of slice p
 *   ...
 *   for each peer p: wait p K+1, copy chunk K-1 of slice p
 *   signal K+2, wait all K+2                   (nobody reads my buffers any more)
 * </pre>
 * A chunk is copied shortly after its owner wrote it (from the shared cache, where there is
 * one), and a rank that is ahead copies instead of waiting at a barrier for the slowest.
 */
public final class TwoShot {
  public static final String NAME = "twoshot";

  /** The most chunks per slice: phases 2..K+1 mark chunks, K+2 ends, all within a call's. */
  public static final int MAX_CHUNKS = Step.MAX_PHASE - 2;

  private TwoShot() {
  }

  public static Plan allReduce(Topology topo, DataType type, long count, PlanConfig cfg) {
    OneShot.requireOneNode(topo, NAME);
    int chunks = chunks(topo.size(), type, count, cfg);
    if (chunks > 1) {
      return pipelined(topo, type, count, cfg, chunks);
    }
    Plan p = Hierarchical.allReduce(topo, type, count, cfg);
    return new Plan(p.collective(), NAME, topo, type, count, -1, cfg, p.steps(), List.of(), 0);
  }

  /** Chunks per slice for {@code count} elements on {@code n} ranks (1: whole phases). */
  public static int chunks(int n, DataType type, long count, PlanConfig cfg) {
    if (n < 2 || cfg.peerChunkBytes() <= 0) {
      return 1;
    }
    int align = cfg.alignElements(type.size());
    long largest = 0;
    for (int p = 0; p < n; p++) {
      largest = Math.max(largest, Slices.size(count, n, p, align));
    }
    long k = (largest * type.size() + cfg.peerChunkBytes() - 1) / cfg.peerChunkBytes();
    // a chunk holds at least one alignment unit, else the cut makes empty chunks
    k = Math.min(k, Math.max(1, largest / align));
    return (int) Math.max(1, Math.min(MAX_CHUNKS, k));
  }

  private static Plan pipelined(Topology topo, DataType type, long count, PlanConfig cfg,
      int chunks) {
    int n = topo.size();
    int align = cfg.alignElements(type.size());
    int[] group = Hierarchical.localGroup(topo, 0);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      int r = s.rank;
      s.barrier(group, 1);
      for (int c = 0; c <= chunks; c++) {
        if (c < chunks) {
          s.reduceFrom(group, Buf.INPUT, chunkLo(count, n, r, chunks, c, align),
              chunkSize(count, n, r, chunks, c, align), true);
          s.signal(2 + c);
        }
        if (c > 0) { // gather the chunk before: its owners are most likely done with it
          for (int j = 1; j < n; j++) {
            int p = (r + j) % n;
            s.await(p, 2 + c - 1);
            s.copyFrom(p, Buf.OUTPUT, chunkLo(count, n, p, chunks, c - 1, align),
                chunkSize(count, n, p, chunks, c - 1, align));
          }
        }
      }
      s.barrier(group, chunks + 2);
    }
    return new Plan(Collective.ALL_REDUCE, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(), 0);
  }

  private static long chunkLo(long count, int n, int slice, int chunks, int c, int align) {
    return Slices.lo(count, n, slice, align)
        + Slices.lo(Slices.size(count, n, slice, align), chunks, c, align);
  }

  private static long chunkSize(long count, int n, int slice, int chunks, int c, int align) {
    return Slices.size(Slices.size(count, n, slice, align), chunks, c, align);
  }

  /**
   * All-gather in place, the second half of {@link #allReduce}: rank i's OUTPUT holds its final
   * slice i; every rank copies the other slices from their owners' OUTPUT. Between the two
   * halves something else may finish the slices (the GPU path's allreduce across nodes does:
   * its slices cross the network between the reduce-scatter and this).
   */
  public static Plan allGatherInPlace(Topology topo, DataType type, long count, PlanConfig cfg) {
    OneShot.requireOneNode(topo, NAME);
    int n = topo.size();
    int align = cfg.alignElements(type.size());
    int[] group = Hierarchical.localGroup(topo, 0);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      if (n == 1) {
        continue;
      }
      s.barrier(group, 1);
      for (int p : group) {
        if (p != s.rank) {
          s.copyFrom(p, Buf.OUTPUT, Slices.lo(count, n, p, align), Slices.size(count, n, p,
              align));
        }
      }
      s.barrier(group, 2);
    }
    return new Plan(Collective.ALL_GATHER, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(), 0);
  }

  /** Reduce-scatter alone: rank i ends with slice i reduced; peers' INPUTs stay until all read. */
  public static Plan reduceScatter(Topology topo, DataType type, long count, PlanConfig cfg) {
    OneShot.requireOneNode(topo, NAME);
    int n = topo.size();
    int align = cfg.alignElements(type.size());
    int[] group = Hierarchical.localGroup(topo, 0);
    List<Schedule> ranks = Schedule.forRanks(n);
    for (Schedule s : ranks) {
      long lo = Slices.lo(count, n, s.rank, align);
      long len = Slices.size(count, n, s.rank, align);
      if (n == 1) {
        s.copy(lo, len, true);
        continue;
      }
      s.barrier(group, 1);
      s.reduceFrom(group, Buf.INPUT, lo, len, true);
      s.barrier(group, 2);
    }
    return new Plan(Collective.REDUCE_SCATTER, NAME, topo, type, count, -1, cfg,
        Schedule.steps(ranks), List.of(), 0);
  }
}
