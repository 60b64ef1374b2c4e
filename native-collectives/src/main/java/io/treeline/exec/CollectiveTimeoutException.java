package io.treeline.exec;

/**
 * A collective that reached its deadline. The communicator adds the group's hang report
 * ({@link #withReport}): who waits for whom, so that the failure names the rank that is behind.
 */
public final class CollectiveTimeoutException extends CollectiveException {
  private final String detail;

  CollectiveTimeoutException(int rank, int peer, String phase, String detail, Throwable cause) {
    super(rank, peer, phase, detail, cause);
    this.detail = detail;
  }

  /** This failure with {@code report} appended (null or empty: this failure). */
  public CollectiveTimeoutException withReport(String report) {
    return report == null || report.isEmpty() ? this : new CollectiveTimeoutException(rank(),
        peer(), phase(), detail + "\n" + report, this);
  }
}
