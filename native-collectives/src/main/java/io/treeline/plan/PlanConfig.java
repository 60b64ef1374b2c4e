package io.treeline.plan;

/**
 * Knobs that shape a plan. {@code chunkBytes}: the pipelining unit of tree and ring plans (a
 * message larger than that moves as several chunks in flight at once). {@code alignBytes}:
 * slice and chunk boundaries fall on multiples of it.
 */
public record PlanConfig(long chunkBytes, int alignBytes) {
  /** 512 KiB chunks (NCCL's Simple protocol uses 512 KiB-1 MiB per step) and 64-byte alignment. */
  public static final PlanConfig DEFAULT = new PlanConfig(512 * 1024, 64);

  public PlanConfig {
    if (alignBytes < 1 || Integer.bitCount(alignBytes) != 1) {
      throw new IllegalArgumentException("alignBytes must be a power of two, got " + alignBytes);
    }
    if (chunkBytes < alignBytes) {
      throw new IllegalArgumentException("chunkBytes (" + chunkBytes
          + ") must be at least alignBytes (" + alignBytes + ")");
    }
  }

  public PlanConfig withChunkBytes(long chunk) {
    return new PlanConfig(chunk, alignBytes);
  }

  /** Alignment in elements of {@code elementSize} bytes (at least 1). */
  public int alignElements(int elementSize) {
    return Math.max(1, alignBytes / elementSize);
  }

  /** Chunk length in elements, a multiple of the alignment. */
  public long chunkElements(int elementSize) {
    int a = alignElements(elementSize);
    return Math.max(a, chunkBytes / elementSize / a * a);
  }
}
