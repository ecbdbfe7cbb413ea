package dev.sand.bus;

/** An event could not be encoded or decoded; the message says which and why. */
public final class EventCodecException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  EventCodecException(String message, Throwable cause) {
    super(message, cause);
  }
}
