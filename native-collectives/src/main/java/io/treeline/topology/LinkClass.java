package io.treeline.topology;

/**
 * How two devices of a node reach each other, in {@code nvidia-smi topo -m}'s words, fastest
 * first: NVLink (with its link count), one PCIe switch (PIX), several PCIe bridges (PXB), the
 * CPU's host bridge (PHB), the PCIe fabric of one NUMA node (NODE), across NUMA nodes (SYS).
 */
public record LinkClass(Kind kind, int nvlinks) {
  /** The connection kinds, fastest first. */
  public enum Kind { SELF, NVLINK, PIX, PXB, PHB, NODE, SYS }

  public static final LinkClass SELF = new LinkClass(Kind.SELF, 0);

  /** "X", "NV8", "PIX", "PXB", "PHB", "NODE", "SYS" (and the older "SOC" for SYS). */
  public static LinkClass parse(String s) {
    String t = s.trim().toUpperCase();
    if (t.equals("X")) {
      return SELF;
    }
    if (t.startsWith("NV")) {
      return new LinkClass(Kind.NVLINK, Integer.parseInt(t.substring(2)));
    }
    if (t.equals("SOC")) {
      return new LinkClass(Kind.SYS, 0);
    }
    return new LinkClass(Kind.valueOf(t), 0);
  }

  /** Whether the path stays off the CPU's root complex (NVLink or PCIe switches only). */
  public boolean peerToPeerCapable() {
    return kind == Kind.NVLINK || kind == Kind.PIX || kind == Kind.PXB || kind == Kind.SELF;
  }

  @Override
  public String toString() {
    return switch (kind) {
      case SELF -> "X";
      case NVLINK -> "NV" + nvlinks;
      default -> kind.name();
    };
  }
}
