package io.treeline.barrier;

/**
 * A barrier stage that {@link BarrierJobs#collect} ran failed, after Spark's retries. Unchecked,
 * unlike the {@code org.apache.spark.SparkException} it wraps (Spark throws that checked
 * exception from Scala without declaring it, so Java code could not catch it by name); the
 * message and {@link #getCause()} carry Spark's, which names the failing task's error.
 */
public final class BarrierStageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what failed
   * @param cause Spark's exception
   */
  public BarrierStageException(String message, Throwable cause) {
    super(message, cause);
  }
}
