package dev.sand.service;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.ByteBuffer;
import java.util.Map;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/**
 * JSON responses for Jetty's core API: every answer of the frontend and the host agent, errors
 * included, is a JSON object.
 */
public final class JsonHttp {
  public static final ObjectMapper MAPPER = JsonMapper.builder().build();

  private JsonHttp() {}

  /** Writes {@code body} as JSON with {@code status} and completes {@code callback}. */
  public static void send(Response response, Callback callback, int status, Object body) {
    byte[] bytes;
    try {
      bytes = MAPPER.writeValueAsBytes(body);
    } catch (JsonProcessingException e) {
      // our bodies are maps of strings and numbers; failing here is a programming error
      callback.failed(e);
      return;
    }
    sendJson(response, callback, status, bytes);
  }

  /** Writes {@code json}, already a serialized JSON document, with {@code status}. */
  public static void sendJson(Response response, Callback callback, int status, byte[] json) {
    response.setStatus(status);
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, "application/json");
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
    response.write(true, ByteBuffer.wrap(json), callback);
  }

  /** Writes {@code {"error": message}}. */
  public static void error(Response response, Callback callback, int status, String message) {
    send(response, callback, status, Map.of("error", message));
  }

  /** Turns the errors Jetty generates itself (bad requests, unhandled exceptions) into JSON. */
  public static final class JsonErrorHandler extends ErrorHandler {
    /** Every method gets its error as JSON (Jetty's default answers only GET, POST, HEAD). */
    @Override
    public boolean errorPageForMethod(String method) {
      return true;
    }

    @Override
    protected void generateResponse(
        Request request,
        Response response,
        int code,
        String message,
        Throwable cause,
        Callback callback) {
      error(response, callback, code, message == null ? "HTTP " + code : message);
    }
  }
}
