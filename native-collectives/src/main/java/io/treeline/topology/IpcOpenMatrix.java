package io.treeline.topology;

/**
 * Which GPU pairs of a node opened each other's CUDA IPC memory handles when probed (the kernels
 * module's IpcOpenProbe: a second process opened every GPU's handle on every GPU and read it
 * back). Probed, not assumed from the link class, because containers and cgroups can forbid
 * what the hardware allows. {@code open[owner][opener]}, {@code error[owner][opener]} (null
 * where open); {@code unavailable} says why nothing was probed (then the matrices are empty).
 */
public record IpcOpenMatrix(boolean[][] open, String[][] error, String unavailable) {
  public static IpcOpenMatrix unavailable(String why) {
    return new IpcOpenMatrix(new boolean[0][0], new String[0][0], why);
  }

  public int gpus() {
    return open.length;
  }

  /** Whether every pair, the diagonal included, opened and read back. */
  public boolean allOpen() {
    for (boolean[] row : open) {
      for (boolean b : row) {
        if (!b) {
          return false;
        }
      }
    }
    return unavailable == null;
  }
}
