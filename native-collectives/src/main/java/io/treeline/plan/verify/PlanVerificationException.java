package io.treeline.plan.verify;

/** A plan that the symbolic executor proved wrong: the message names rank, step and reason. */
public final class PlanVerificationException extends RuntimeException {
  public PlanVerificationException(String message) {
    super(message);
  }
}
