package dev.sand.frontend;

/**
 * A request a route cannot serve, with the HTTP status and the message to answer (as JSON {@code
 * {"error": message}}). Thrown inside a route and answered at its edge; no stack trace (it is an
 * answer, not a fault).
 */
final class Refused extends Exception {
  private static final long serialVersionUID = 1L;
  final int status;

  Refused(int status, String message) {
    super(message, null, false, false);
    this.status = status;
  }
}
