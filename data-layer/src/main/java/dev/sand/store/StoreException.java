package dev.sand.store;

/**
 * The global data layer refused a request or is unreachable. The message names the store, the
 * endpoint, and the statement or key involved; the cause keeps the driver's exception.
 */
public final class StoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
