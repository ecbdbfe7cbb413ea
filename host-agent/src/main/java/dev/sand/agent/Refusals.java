package dev.sand.agent;

import dev.sand.agent.refusal.Refusal;
import dev.sand.service.JsonHttp;
import java.util.Map;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/** The one place a {@link Refusal} of any domain becomes an HTTP status. */
final class Refusals {
  private Refusals() {}

  /** The HTTP status that answers a refusal for {@code reason}. */
  static int status(Refusal.Reason reason) {
    return switch (reason) {
      case INVALID -> HttpStatus.BAD_REQUEST_400;
      case NOT_FOUND -> HttpStatus.NOT_FOUND_404;
      case CONFLICT -> HttpStatus.CONFLICT_409;
      case FORBIDDEN -> HttpStatus.FORBIDDEN_403;
      case TOO_LARGE -> HttpStatus.PAYLOAD_TOO_LARGE_413;
      case UNAVAILABLE -> HttpStatus.SERVICE_UNAVAILABLE_503;
      case INTERNAL -> HttpStatus.INTERNAL_SERVER_ERROR_500;
    };
  }

  /** Answers {@code refusal} as {@code {"error": message}} with its status. */
  static void answer(Response response, Callback callback, Refusal refusal) {
    JsonHttp.send(
        response, callback, status(refusal.reason()), Map.of("error", refusal.getMessage()));
  }
}
