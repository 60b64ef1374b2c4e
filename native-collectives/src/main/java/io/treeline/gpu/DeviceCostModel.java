package io.treeline.gpu;

import io.treeline.plan.Algorithm;

/**
 * The GPU path's choice between one-shot and two-shot inside a node, as time = rounds x
 * {@code roundMicros} + bytes on the busiest resource / its bandwidth. With k local ranks and an
 * S-byte message:
 *
 * <pre>
 *                     one GPU per rank (NVLink, PCIe)       ranks sharing one GPU (one HBM)
 *                     bytes into each GPU over its links    bytes read + written on the HBM
 * one-shot  2 rounds  (k - 1) S                            k (k + 1) S      (k reads + 1 write each)
 * two-shot  3 rounds  2 (k - 1) / k S                      (3k - 1) S       (S + S/k, then 2(k-1)/k S each)
 * </pre>
 *
 * A shared GPU counts writes too because they use the same HBM as the reads; that is why two
 * ranks on one GPU switch to two-shot at all (2.5 S against 3 S per rank) although both read
 * the message twice.
 *
 * @param roundMicros one synchronisation round (a barrier: IPC events or the flag kernel)
 * @param gbps bandwidth of the busiest resource, 10^9 bytes per second
 * @param sharedGpu whether the ranks share one GPU's memory (the right-hand column)
 */
public record DeviceCostModel(double roundMicros, double gbps, boolean sharedGpu) {
  public double micros(Algorithm a, int k, long bytes) {
    double s = bytes;
    double rounds;
    double moved;
    if (a == Algorithm.ONESHOT) {
      rounds = 2;
      moved = sharedGpu ? (double) k * (k + 1) * s : (k - 1) * s;
    } else if (a == Algorithm.TWOSHOT) {
      rounds = 3;
      moved = sharedGpu ? (3.0 * k - 1) * s : 2.0 * (k - 1) / k * s;
    } else {
      throw new IllegalArgumentException("the device cost model covers oneshot and twoshot, not "
          + a.id());
    }
    return rounds * roundMicros + moved / (gbps * 1e3);
  }

  /** Whichever of one-shot and two-shot the model gives less time (one-shot on a tie). */
  public Algorithm choose(int k, long bytes) {
    return micros(Algorithm.ONESHOT, k, bytes) <= micros(Algorithm.TWOSHOT, k, bytes)
        ? Algorithm.ONESHOT : Algorithm.TWOSHOT;
  }
}
