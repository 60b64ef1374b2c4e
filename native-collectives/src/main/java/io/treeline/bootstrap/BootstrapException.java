package io.treeline.bootstrap;

/** The ranks could not find each other; the message names the rank, the peer and the phase. */
public final class BootstrapException extends RuntimeException {
  public BootstrapException(String message, Throwable cause) {
    super(message, cause);
  }

  public BootstrapException(String message) {
    super(message);
  }
}
