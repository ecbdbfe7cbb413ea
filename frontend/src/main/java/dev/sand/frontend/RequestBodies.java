package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.LongFunction;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;

/**
 * The small JSON bodies of the frontend's own routes (a stop, a task callback): read whole up to a
 * limit (413 beyond it, before anything is parsed) and taken as a JSON object (400 otherwise). Each
 * refusal's text is the route's.
 */
final class RequestBodies {
  private RequestBodies() {}

  /**
   * The body, at most {@code limit} bytes; 413 with {@code tooLarge} of the declared or read length
   * beyond it, 400 when it cannot be read.
   */
  static byte[] read(Request request, int limit, LongFunction<String> tooLarge) throws Refused {
    long declared = request.getLength();
    if (declared > limit) {
      throw new Refused(HttpStatus.PAYLOAD_TOO_LARGE_413, tooLarge.apply(declared));
    }
    byte[] body;
    try (InputStream in = Content.Source.asInputStream(request)) {
      body = in.readNBytes(limit + 1);
    } catch (IOException e) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, "cannot read the request body: " + e);
    }
    if (body.length > limit) {
      throw new Refused(HttpStatus.PAYLOAD_TOO_LARGE_413, tooLarge.apply(body.length));
    }
    return body;
  }

  /** Whether {@code body} holds nothing but white space. */
  static boolean blank(byte[] body) {
    return new String(body, StandardCharsets.UTF_8).isBlank();
  }

  /** {@code body} as a JSON object; 400 when it is not JSON, or {@code notObject} when not one. */
  static JsonNode object(byte[] body, String notObject) throws Refused {
    JsonNode doc;
    try {
      doc = JsonHttp.MAPPER.readTree(body);
    } catch (IOException e) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, "request body is not JSON: " + e.getMessage());
    }
    if (doc == null || !doc.isObject()) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, notObject);
    }
    return doc;
  }
}
