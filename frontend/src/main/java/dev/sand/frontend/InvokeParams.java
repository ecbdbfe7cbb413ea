package dev.sand.frontend;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;

/**
 * Reads what an invocation asks for ({@code POST /v1/apps/{app}/invoke}): each query parameter and
 * the input body, checked one by one, each refusal a {@link Refused} naming the parameter and the
 * value (400; 404 for an unknown workflow; 413 for a body over the limit). Stateless.
 */
final class InvokeParams {
  /** How long a synchronous call waits for its result unless {@code timeout_s} says otherwise. */
  static final Duration DEFAULT_SYNC_TIMEOUT = Duration.ofSeconds(300);

  /** The largest {@code timeout_s} accepted. */
  static final int MAX_SYNC_TIMEOUT_S = 3600;

  private static final ObjectReader INPUT_READER =
      JsonHttp.MAPPER.reader().with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private InvokeParams() {}

  /** {@code mode}: {@code sync} (default) is true, {@code async} false. */
  static boolean mode(String mode) throws Refused {
    if (mode == null || "sync".equals(mode)) {
      return true;
    }
    if ("async".equals(mode)) {
      return false;
    }
    throw new Refused(HttpStatus.BAD_REQUEST_400, "mode must be sync or async, got '" + mode + "'");
  }

  /** The execution name of an idempotent start, or null without one. */
  static String name(String name) throws Refused {
    if (name == null) {
      return null;
    }
    try {
      return ExecutionNames.check(name);
    } catch (IllegalArgumentException e) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, e.getMessage());
    }
  }

  /** {@code local} (default): the entry grain's local queue; {@code kafka}: its topic. */
  static boolean via(String via) throws Refused {
    if (via == null || "local".equals(via)) {
      return false;
    }
    if ("kafka".equals(via)) {
      return true;
    }
    throw new Refused(HttpStatus.BAD_REQUEST_400, "via must be local or kafka, got '" + via + "'");
  }

  /** {@code workflow}: one of the app's, else its default workflow. */
  static String workflow(AppMetadata app, String requested) throws Refused {
    String workflows = String.join(", ", app.entryGrains().keySet());
    if (requested == null || requested.isEmpty()) {
      return app.defaultWorkflow()
          .filter(app.entryGrains()::containsKey)
          .orElseThrow(
              () ->
                  new Refused(
                      HttpStatus.BAD_REQUEST_400,
                      "application '"
                          + app.name()
                          + "' has no default workflow; name one with"
                          + " ?workflow= (workflows: "
                          + workflows
                          + ")"));
    }
    if (!app.entryGrains().containsKey(requested)) {
      throw new Refused(
          HttpStatus.NOT_FOUND_404,
          "application '"
              + app.name()
              + "' has no workflow '"
              + requested
              + "' (workflows: "
              + workflows
              + ")");
    }
    return requested;
  }

  /** {@code timeout_s}: whole seconds 1..{@link #MAX_SYNC_TIMEOUT_S}, else the default. */
  static Duration timeout(String text) throws Refused {
    if (text == null) {
      return DEFAULT_SYNC_TIMEOUT;
    }
    try {
      int seconds = Integer.parseInt(text);
      if (seconds >= 1 && seconds <= MAX_SYNC_TIMEOUT_S) {
        return Duration.ofSeconds(seconds);
      }
    } catch (NumberFormatException e) {
      // answered below with the same message as a number out of range
    }
    throw new Refused(
        HttpStatus.BAD_REQUEST_400,
        "timeout_s must be an integer 1.." + MAX_SYNC_TIMEOUT_S + ", got '" + text + "'");
  }

  /**
   * The body limit: {@code maxPayloadBytes} (the frontend's), or the application's {@code
   * limits.payload_kb} if lower.
   */
  static int limit(AppMetadata app, int maxPayloadBytes) {
    int limit = maxPayloadBytes;
    if (app.payloadKb().isPresent()) {
      limit = (int) Math.min(limit, app.payloadKb().getAsInt() * 1024L);
    }
    return limit;
  }

  /**
   * The input document as compact JSON; an empty body is {@code {}}. Blocking: reads at most {@code
   * limit} + 1 bytes of the body.
   */
  static byte[] input(Request request, int limit) throws Refused {
    // the declared length when there is one; a read body is one byte over: "more than" the limit
    byte[] body =
        RequestBodies.read(
            request,
            limit,
            size ->
                tooLarge(size == limit + 1L ? "more than " + limit : Long.toString(size), limit));
    if (isBlank(body)) {
      return "{}".getBytes(StandardCharsets.UTF_8);
    }
    try {
      return JsonHttp.MAPPER.writeValueAsBytes(INPUT_READER.readTree(body));
    } catch (JacksonException e) {
      JsonLocation at = e.getLocation();
      throw new Refused(
          HttpStatus.BAD_REQUEST_400,
          "request body is not JSON: "
              + e.getOriginalMessage()
              + (at == null
                  ? ""
                  : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
    } catch (IOException e) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, "request body is not JSON: " + e.getMessage());
    }
  }

  private static String tooLarge(String size, int limit) {
    return "request body of "
        + size
        + " bytes exceeds the limit of "
        + limit
        + " bytes; pass large data through the data layer";
  }

  private static boolean isBlank(byte[] body) {
    for (byte b : body) {
      if (b != ' ' && b != '\t' && b != '\r' && b != '\n') {
        return false;
      }
    }
    return true;
  }
}
