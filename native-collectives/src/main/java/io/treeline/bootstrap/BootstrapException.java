package io.treeline.bootstrap;

/** The ranks could not find each other; the message names the rank, the peer and the phase. */
public final class BootstrapException extends RuntimeException {
  public BootstrapException(String message, Throwable cause) {
    super(message, cause);
  }

  public BootstrapException(String message) {
    super(message);
  }

  /**
   * What went wrong in words, never "null": an exception's message, or for the ones that carry
   * none (an {@code EOFException} from a peer that closed) what they mean.
   */
  public static String describe(Throwable e) {
    if (e instanceof java.io.EOFException) {
      return "the other side closed the connection" + (e.getMessage() != null ? " ("
          + e.getMessage() + ")" : "");
    }
    if (e.getMessage() != null && !e.getMessage().isBlank()) {
      return e.getMessage();
    }
    return e.getClass().getSimpleName() + (e.getCause() != null ? " (" + describe(e.getCause())
        + ")" : "");
  }
}
