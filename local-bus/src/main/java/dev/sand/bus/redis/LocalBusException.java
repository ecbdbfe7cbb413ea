package dev.sand.bus.redis;

/** The local bus (Redis) refused a command or is unreachable; the message names the socket. */
public final class LocalBusException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public LocalBusException(String message, Throwable cause) {
    super(message, cause);
  }
}
