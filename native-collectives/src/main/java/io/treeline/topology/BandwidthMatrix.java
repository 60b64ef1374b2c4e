package io.treeline.topology;

/**
 * Measured copy bandwidth between the GPUs of a node for one message size (the kernels
 * module's P2pBandwidth): {@code gbps[src][dst]} in GB/s (1e9 bytes copied per second, one
 * direction; each byte is read once and written once, so on the diagonal, a device-local copy,
 * the memory moves twice the figure). NaN where the copy failed ({@code error} says why);
 * {@code peerAccess[src][dst]} is false where the driver staged the copy through host memory.
 */
public record BandwidthMatrix(long bytes, int repetitions, double[][] gbps,
    boolean[][] peerAccess, String[][] error) {
  public static final String UNIT = "GB/s: 1e9 bytes copied per second, one direction (each "
      + "byte read once and written once), median of the timed repetitions";

  public int gpus() {
    return gbps.length;
  }
}
