package io.treeline.core;

/**
 * A collective that reached its deadline. The communicator appends the group's hang report
 * ({@link #withReport}): every rank's call, phase and the peer it waits on, and which rank is
 * behind, so that the failure names the rank the others wait for, not only "timed out".
 */
public final class CollectiveTimeoutException extends CollectiveException {
  private static final long serialVersionUID = 1L;

  /** The message without the rank, peer and phase prefix. */
  private final String detail;

  CollectiveTimeoutException(int rank, int peer, String phase, String detail, Throwable cause) {
    super(rank, peer, phase, detail, cause);
    this.detail = detail;
  }

  /**
   * This failure with the hang report appended.
   *
   * @param report who waits for whom, one rank a line; null or empty for none
   * @return a new exception carrying the report, caused by this one (this one when no report)
   */
  public CollectiveTimeoutException withReport(String report) {
    return report == null || report.isEmpty() ? this : new CollectiveTimeoutException(rank(),
        peer(), phase(), detail + "\n" + report, this);
  }
}
