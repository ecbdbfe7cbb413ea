package dev.sand.frontend;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Optional;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forwards the management API ({@code /v1/apps...} except invoke) to this host's agent: same
 * method, path and query; the request body and the answer are streamed, never buffered whole, so a
 * 64 MiB upload costs a few buffers and NDJSON progress lines reach the client as the agent writes
 * them.
 *
 * <p>Blocking: {@link #forward} holds the calling thread for the whole exchange (deploys are rare;
 * invocations never come here). Thread-safe.
 */
final class AgentProxy {
  private static final Logger LOG = LoggerFactory.getLogger(AgentProxy.class);

  /** The largest request body forwarded (an application archive), as nginx allows. */
  static final long MAX_BODY_BYTES = 64L * 1024 * 1024;

  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);

  /** Until the agent's status line and headers; the streamed body afterwards has no limit. */
  private static final Duration HEADERS_TIMEOUT = Duration.ofMinutes(2);

  private final String address;
  private final URI base;
  private final HttpClient client;

  /** The agent at {@code base} ({@code http://host:port}). */
  AgentProxy(URI base) {
    this.address = base.getHost() + ":" + base.getPort();
    this.base = base;
    this.client =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(CONNECT_TIMEOUT)
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
  }

  /**
   * Forwards {@code request} and streams the agent's answer (status, Content-Type, body) into
   * {@code response}; completes {@code callback}. Answers 503 when the agent is unreachable, 504
   * when it does not answer within {@link #HEADERS_TIMEOUT}, 413 for a body over {@link
   * #MAX_BODY_BYTES}.
   */
  void forward(Request request, Response response, Callback callback) {
    long length = request.getLength();
    if (length > MAX_BODY_BYTES) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.PAYLOAD_TOO_LARGE_413,
          "request body of " + length + " bytes exceeds the limit of " + MAX_BODY_BYTES + " bytes");
      return;
    }
    String query = request.getHttpURI().getQuery();
    URI target = base.resolve(request.getHttpURI().getPath() + (query == null ? "" : "?" + query));
    HttpRequest.Builder forward =
        HttpRequest.newBuilder(target)
            .timeout(HEADERS_TIMEOUT)
            .method(request.getMethod(), body(request, length));
    copyHeader(request, forward, HttpHeader.CONTENT_TYPE);
    copyHeader(request, forward, HttpHeader.ACCEPT);
    // deploys print progress for minutes; Jetty's idle timeout must not cut the stream
    request.addIdleTimeoutListener(timeout -> false);

    HttpResponse<InputStream> answer;
    try {
      answer = client.send(forward.build(), HttpResponse.BodyHandlers.ofInputStream());
    } catch (HttpTimeoutException e) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.GATEWAY_TIMEOUT_504,
          "host agent at "
              + address
              + " did not answer "
              + request.getMethod()
              + " "
              + target.getPath()
              + " within "
              + HEADERS_TIMEOUT.toSeconds()
              + " s");
      return;
    } catch (IOException e) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "host agent at " + address + " is not reachable: " + describe(e));
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      callback.failed(e);
      return;
    }
    response.setStatus(answer.statusCode());
    answer
        .headers()
        .firstValue("content-type")
        .ifPresent(type -> response.getHeaders().put(HttpHeader.CONTENT_TYPE, type));
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-store");
    try (InputStream in = answer.body()) {
      OutputStream out = Content.Sink.asOutputStream(response);
      byte[] buffer = new byte[16 * 1024];
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        // write returns once Jetty sent the bytes: each progress line leaves as it arrives
        out.write(buffer, 0, n);
        out.flush();
      }
      out.close();
      callback.succeeded();
    } catch (IOException e) {
      LOG.atWarn()
          .addKeyValue("path", target.getPath())
          .addKeyValue("error", describe(e))
          .log("streaming the host agent's answer failed");
      callback.failed(e);
    }
  }

  /**
   * The body of {@code GET path} when the agent answers 200; empty on any other answer or when it
   * cannot be reached. Blocking, bounded by the request timeout.
   */
  Optional<byte[]> get(String path) {
    try {
      HttpResponse<byte[]> answer =
          client.send(
              HttpRequest.newBuilder(base.resolve(path)).timeout(HEADERS_TIMEOUT).GET().build(),
              HttpResponse.BodyHandlers.ofByteArray());
      return answer.statusCode() == 200 ? Optional.of(answer.body()) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  private static HttpRequest.BodyPublisher body(Request request, long length) {
    if (length == 0
        || (length < 0 && !request.getHeaders().contains(HttpHeader.TRANSFER_ENCODING))) {
      return HttpRequest.BodyPublishers.noBody();
    }
    HttpRequest.BodyPublisher stream =
        HttpRequest.BodyPublishers.ofInputStream(() -> Content.Source.asInputStream(request));
    // keep Content-Length when the client sent one; otherwise the agent gets a chunked body
    return length > 0 ? HttpRequest.BodyPublishers.fromPublisher(stream, length) : stream;
  }

  private static void copyHeader(Request request, HttpRequest.Builder forward, HttpHeader name) {
    String value = request.getHeaders().get(name);
    if (value != null) {
      forward.header(name.asString(), value);
    }
  }

  private static String describe(Throwable e) {
    String message = e.getMessage();
    Throwable cause = e.getCause();
    if ((message == null || message.isEmpty()) && cause != null) {
      return describe(cause);
    }
    return message == null || message.isEmpty() ? e.getClass().getSimpleName() : message;
  }
}
