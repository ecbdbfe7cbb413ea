package dev.sand.agent;

/** The agent could not start: a port is taken or a dependency stayed unreachable. */
public final class StartupException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StartupException(String message) {
    super(message);
  }

  public StartupException(String message, Throwable cause) {
    super(message, cause);
  }
}
