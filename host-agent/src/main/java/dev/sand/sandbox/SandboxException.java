package dev.sand.sandbox;

/** A sandbox backend refused a request or is unreachable; the message names the sandbox. */
public final class SandboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public SandboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
