package dev.sand.contracts;

/**
 * The host agent's routes for task callbacks (decision 0033), which frontends call with the agents'
 * secret and the caller's identity headers; declared once for both sides.
 *
 * <ul>
 *   <li>{@link #COMPLETE}: body {@code {"token", "status": "SUCCEEDED"|"FAILED", "outcome"}}
 *       (outcome as {@link TaskOutcomes}); 200 {@code {"status", "host": id|null, "member":
 *       base64|null}}: the timer to nudge, if registered
 *   <li>{@link #HEARTBEAT}: body {@code {"token"}}; 200 {@code {"status": "WAITING"}}
 * </ul>
 *
 * <p>Both: 400 a malformed body or token, 403 a token of an app the caller does not own, 409 the
 * wait (or its execution) ended, with {@code {"error"}} saying how; 503 while Cassandra cannot
 * answer.
 */
public final class TaskCallbackRoutes {
  public static final String COMPLETE = "/internal/tasks/complete";
  public static final String HEARTBEAT = "/internal/tasks/heartbeat";

  private TaskCallbackRoutes() {}
}
