package dev.sand.bridge.kafka;

/** The global bus (Kafka) refused a request or is unreachable; the message names the brokers. */
public final class BridgeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public BridgeException(String message, Throwable cause) {
    super(message, cause);
  }
}
