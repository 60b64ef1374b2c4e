package io.treeline.plan;

import io.treeline.core.Tuning;

/**
 * Knobs that shape a plan. {@code chunkBytes}: the pipelining unit of tree and ring plans (a
 * message larger than that moves as several chunks in flight at once). {@code alignBytes}:
 * slice and chunk boundaries fall on multiples of it. {@code peerChunkBytes}: when positive,
 * {@link TwoShot}'s reduce-scatter and all-gather are pipelined in chunks of about that many
 * bytes per slice (at most {@link TwoShot#MAX_CHUNKS}), so that peers copy a reduced chunk
 * while its owner reduces the next; 0 keeps the two phases whole (one barrier between them,
 * what the GPU path runs). {@code netGrainBytes}: across nodes, the smallest piece of a message
 * that a rank's slice or one of the two trees carries ({@link Hierarchical}): a message with
 * less than that per local rank crosses on fewer ranks, and a slice of less than twice that on
 * one tree, so a small allreduce sends one network message per hop instead of one per rank and
 * tree. A grain of {@link #AUTO_NET_GRAIN} (the default) is {@link #AUTO_NET_GRAIN_NODE_BYTES}
 * divided among the ranks of the busiest node ({@link #netGrainElements(int, int)}).
 */
public record PlanConfig(long chunkBytes, int alignBytes, long peerChunkBytes, int netGrainBytes) {
  /** {@code netGrainBytes} that asks for the grain by ranks per node. */
  public static final int AUTO_NET_GRAIN = 0;

  /**
   * The automatic grain's bytes per node: the grain is this divided by the ranks of the busiest
   * node (rounded down to a power of two), so that a message crosses on one rank and one tree up
   * to a grain, and on every rank and both trees from twice this many bytes, whatever the ranks
   * per node (the plans from 64 KiB up are the alignment's). Measured across simulated nodes on
   * 16 cores, 2026-12-07 07:36 UTC (docs/BENCHMARKS.md, "The automatic network grain"):
   * 0.46-0.88x the alignment's median from 256 B to 4 KiB at 2x2, 2x4 and 4x2 (2x1:
   * 0.84-0.95x).
   */
  public static final int AUTO_NET_GRAIN_NODE_BYTES = 32 * 1024;

  /**
   * 512 KiB chunks (NCCL's Simple protocol uses 512 KiB-1 MiB per step), 64-byte alignment and
   * the network grain by ranks per node.
   */
  public static final PlanConfig DEFAULT = new PlanConfig(512 * 1024, 64, 0, AUTO_NET_GRAIN);

  /**
   * The host's two-shot pipelining unit: 1 MiB per slice chunk. Measured against whole phases
   * (docs/BENCHMARKS.md, "Pipelined two-shot").
   */
  public static final long HOST_PEER_CHUNK_BYTES = 1024 * 1024;

  /**
   * The pipelining unit the host communicator uses when {@code localRanks} ranks share this
   * machine: 0 (whole phases) unless the system property {@code treeline.peerChunkBytes} asks
   * for chunks. Pipelining was measured on 16 free cores (H200 host, 2026-12-03 14:37 UTC,
   * PeerBench, f32): no gain and at 4 ranks 64 MiB a loss (70.1 against 47.9 ms with one reduce
   * thread; 8 ranks: 54.8 against 56.9), so it is not the default; on this 2-core VM it
   * oversubscribes (a rank that waits for a descheduled peer yields its core for a scheduler
   * slice, and each chunk adds a wait per peer). The property ({@link #HOST_PEER_CHUNK_BYTES}
   * is the measured unit) is kept for measuring it again.
   *
   * @param localRanks ranks of the node on this machine (kept for a rule by core count)
   * @return bytes per pipelined slice chunk, 0 for whole phases
   */
  public static long hostPeerChunkBytes(int localRanks) {
    return Math.max(0, Tuning.PEER_CHUNK_BYTES.getLong());
  }

  /** Whole intra-node phases ({@code peerChunkBytes} 0), the network grain the alignment. */
  public PlanConfig(long chunkBytes, int alignBytes) {
    this(chunkBytes, alignBytes, 0, alignBytes);
  }

  public PlanConfig {
    if (alignBytes < 1 || Integer.bitCount(alignBytes) != 1) {
      throw new IllegalArgumentException("alignBytes must be a power of two, got " + alignBytes);
    }
    if (chunkBytes < alignBytes) {
      throw new IllegalArgumentException("chunkBytes (" + chunkBytes
          + ") must be at least alignBytes (" + alignBytes + ")");
    }
    if (netGrainBytes != AUTO_NET_GRAIN
        && (netGrainBytes < alignBytes || Integer.bitCount(netGrainBytes) != 1)) {
      throw new IllegalArgumentException("netGrainBytes must be 0 (by ranks per node) or a power "
          + "of two, at least alignBytes (" + alignBytes + "), got " + netGrainBytes);
    }
    if (peerChunkBytes < 0) {
      throw new IllegalArgumentException("peerChunkBytes must be 0 (off) or positive, got "
          + peerChunkBytes);
    }
  }

  public PlanConfig withChunkBytes(long chunk) {
    return new PlanConfig(chunk, alignBytes, peerChunkBytes, netGrainBytes);
  }

  /** The same knobs with two-shot pipelined in chunks of {@code bytes} (0: whole phases). */
  public PlanConfig withPeerChunkBytes(long bytes) {
    return new PlanConfig(chunkBytes, alignBytes, bytes, netGrainBytes);
  }

  /** The same knobs with the network grain {@code bytes}. */
  public PlanConfig withNetGrainBytes(int bytes) {
    return new PlanConfig(chunkBytes, alignBytes, peerChunkBytes, bytes);
  }

  /** Alignment in elements of {@code elementSize} bytes (at least 1). */
  public int alignElements(int elementSize) {
    return Math.max(1, alignBytes / elementSize);
  }

  /**
   * The network grain in elements of {@code elementSize} bytes: a multiple of
   * {@link #alignElements}, at most {@link #chunkElements} (a grain above the chunk is the
   * chunk).
   *
   * @param ranksPerNode ranks of the busiest node (what the automatic grain divides)
   */
  public int netGrainElements(int elementSize, int ranksPerNode) {
    int a = alignElements(elementSize);
    int bytes = netGrainBytes(ranksPerNode);
    return (int) Math.min(chunkElements(elementSize), Math.max(a, bytes / elementSize));
  }

  /**
   * The network grain in bytes for nodes of at most {@code ranksPerNode} ranks: the configured
   * one, or for {@link #AUTO_NET_GRAIN} {@link #AUTO_NET_GRAIN_NODE_BYTES} / ranksPerNode
   * rounded down to a power of two (at least the alignment).
   */
  public int netGrainBytes(int ranksPerNode) {
    if (ranksPerNode < 1) {
      throw new IllegalArgumentException("ranksPerNode must be at least 1, got " + ranksPerNode);
    }
    if (netGrainBytes != AUTO_NET_GRAIN) {
      return netGrainBytes;
    }
    return Math.max(alignBytes, Integer.highestOneBit(AUTO_NET_GRAIN_NODE_BYTES / ranksPerNode));
  }

  /** Chunk length in elements, a multiple of the alignment. */
  public long chunkElements(int elementSize) {
    int a = alignElements(elementSize);
    return Math.max(a, chunkBytes / elementSize / a * a);
  }
}
