package dev.sand.frontend;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.contracts.Caller;
import dev.sand.contracts.contractsConstants;
import dev.sand.service.InternalApi;
import dev.sand.service.JsonHttp;
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
 * Forwards the management API ({@code /v1/apps...} except invoke, users and tokens) to a host
 * agent, with the agent's secret and the caller (decision 0017): same method, path and query; the
 * request body and the answer are streamed, never buffered whole, so a 64 MiB upload costs a few
 * buffers and NDJSON progress lines reach the client as the agent writes them.
 *
 * <p>Blocking: {@link #forward} holds the calling thread for the whole exchange (deploys are rare;
 * invocations never come here). Thread-safe.
 */
final class AgentProxy {
  private static final Logger LOG = LoggerFactory.getLogger(AgentProxy.class);

  /** The largest request body forwarded (an application archive), as nginx allows. */
  static final long MAX_BODY_BYTES = 64L * 1024 * 1024;

  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);
  private static final String PRINCIPAL_PATH = InternalApi.PRINCIPAL;

  /** Until the agent's status line and headers; the streamed body afterwards has no limit. */
  private static final Duration HEADERS_TIMEOUT = Duration.ofMinutes(2);

  /** How long a token lookup may take before the request is answered 503. */
  private static final Duration LOOKUP_TIMEOUT = Duration.ofSeconds(5);

  private static final int MAX_SMALL_ANSWER = 1024 * 1024;

  private final String address;
  private final URI base;
  private final String secret;
  private final HttpClient client;

  /** An agent's answer read whole (small answers only). */
  record Answer(int status, String contentType, byte[] body) {}

  /**
   * The agent at {@code base} ({@code http://host:port}), which answers callers holding {@code
   * secret} only (decision 0017).
   */
  AgentProxy(URI base, String secret) {
    this.address = base.getHost() + ":" + base.getPort();
    this.base = base;
    this.secret = secret;
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
  void forward(Request request, Response response, Callback callback, Caller caller) {
    long length = request.getLength();
    if (length > MAX_BODY_BYTES) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.PAYLOAD_TOO_LARGE_413,
          "request body of " + length + " bytes exceeds the limit of " + MAX_BODY_BYTES + " bytes");
      return;
    }
    URI target = target(request);
    HttpRequest.Builder forward =
        HttpRequest.newBuilder(target)
            .timeout(HEADERS_TIMEOUT)
            .method(request.getMethod(), body(request, length));
    copyHeader(request, forward, HttpHeader.CONTENT_TYPE);
    copyHeader(request, forward, HttpHeader.ACCEPT);
    onBehalfOf(forward, caller);
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
   * Forwards {@code request} (a small one: users and tokens) and returns the agent's whole answer,
   * so that the caller can act on it before answering. Blocking.
   *
   * @throws IOException when the agent cannot be reached or its answer is over 1 MiB
   */
  Answer exchange(Request request, Caller caller) throws IOException, InterruptedException {
    URI target = target(request);
    HttpRequest.Builder forward =
        HttpRequest.newBuilder(target)
            .timeout(LOOKUP_TIMEOUT)
            .method(request.getMethod(), body(request, request.getLength()));
    copyHeader(request, forward, HttpHeader.CONTENT_TYPE);
    onBehalfOf(forward, caller);
    HttpResponse<InputStream> answer =
        client.send(forward.build(), HttpResponse.BodyHandlers.ofInputStream());
    try (InputStream in = answer.body()) {
      byte[] body = in.readNBytes(MAX_SMALL_ANSWER + 1);
      if (body.length > MAX_SMALL_ANSWER) {
        throw new IOException("the host agent's answer is over " + MAX_SMALL_ANSWER + " bytes");
      }
      return new Answer(
          answer.statusCode(),
          answer.headers().firstValue("content-type").orElse("application/json"),
          body);
    }
  }

  /**
   * Sends {@code method path} with the JSON {@code body} for {@code caller} (an agent's internal
   * route) and returns its whole answer. Blocking, bounded by the lookup timeout.
   *
   * @throws IOException when the agent cannot be reached or does not answer in time
   */
  Answer call(String method, String path, byte[] body, Caller caller)
      throws IOException, InterruptedException {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(base.resolve(path))
            .timeout(LOOKUP_TIMEOUT)
            .header("Content-Type", "application/json")
            .method(method, HttpRequest.BodyPublishers.ofByteArray(body));
    onBehalfOf(request, caller);
    HttpResponse<byte[]> answer =
        client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    return new Answer(
        answer.statusCode(),
        answer.headers().firstValue("content-type").orElse("application/json"),
        answer.body());
  }

  /**
   * The body of {@code GET path} for {@code caller} when the agent answers 200; empty on any other
   * answer or when it cannot be reached. Blocking, bounded by the request timeout.
   */
  Optional<byte[]> get(String path, Caller caller) {
    return fetch(path, caller).filter(a -> a.status() == 200).map(Answer::body);
  }

  /**
   * The agent's answer to {@code GET path} for {@code caller}, whatever its status; empty when it
   * cannot be reached. Blocking, bounded by the request timeout.
   */
  Optional<Answer> fetch(String path, Caller caller) {
    try {
      HttpRequest.Builder get = HttpRequest.newBuilder(base.resolve(path)).timeout(HEADERS_TIMEOUT);
      onBehalfOf(get, caller);
      HttpResponse<byte[]> answer =
          client.send(get.GET().build(), HttpResponse.BodyHandlers.ofByteArray());
      String type = answer.headers().firstValue("Content-Type").orElse("application/json");
      return Optional.of(new Answer(answer.statusCode(), type, answer.body()));
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
  }

  /**
   * The agent's answer to {@code GET path} for {@code caller}, whatever its status, without holding
   * a thread; fails with the {@link IOException} when the agent cannot be reached or does not
   * answer within the lookup timeout (5 s).
   */
  java.util.concurrent.CompletableFuture<Answer> fetchAsync(String path, Caller caller) {
    HttpRequest.Builder get = HttpRequest.newBuilder(base.resolve(path)).timeout(LOOKUP_TIMEOUT);
    onBehalfOf(get, caller);
    return client
        .sendAsync(get.GET().build(), HttpResponse.BodyHandlers.ofByteArray())
        .thenApply(
            answer ->
                new Answer(
                    answer.statusCode(),
                    answer.headers().firstValue("Content-Type").orElse("application/json"),
                    answer.body()));
  }

  /** {@code host:port} of this agent, for messages. */
  String address() {
    return address;
  }

  /**
   * The caller whose token has SHA-256 {@code hash}, as the agent finds it in the global data
   * layer; empty when no valid token has it.
   *
   * @throws Authenticator.Unavailable when the agent cannot answer now
   */
  Optional<Caller> principal(String hash) {
    HttpRequest.Builder get =
        HttpRequest.newBuilder(base.resolve(PRINCIPAL_PATH))
            .timeout(LOOKUP_TIMEOUT)
            .header(contractsConstants.HEADER_TOKEN_HASH, hash);
    onBehalfOf(get, Caller.SYSTEM);
    HttpResponse<byte[]> answer;
    try {
      answer = client.send(get.GET().build(), HttpResponse.BodyHandlers.ofByteArray());
    } catch (IOException e) {
      throw new Authenticator.Unavailable(
          "tokens cannot be checked now: host agent at " + address + ": " + describe(e));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Authenticator.Unavailable("interrupted while checking the token");
    }
    if (answer.statusCode() == 404) {
      return Optional.empty();
    }
    if (answer.statusCode() != 200) {
      throw new Authenticator.Unavailable(
          "tokens cannot be checked now: host agent at "
              + address
              + " answered "
              + answer.statusCode()
              + " "
              + new String(answer.body(), java.nio.charset.StandardCharsets.UTF_8));
    }
    try {
      JsonNode doc = JsonHttp.MAPPER.readTree(answer.body());
      return Optional.of(
          Caller.of(
              doc.path("user").asText(), doc.path("role").asText(), doc.path("token_id").asText()));
    } catch (IOException | IllegalArgumentException e) {
      throw new Authenticator.Unavailable(
          "the host agent at " + address + " answered a token lookup with " + e.getMessage());
    }
  }

  /** {@code request}'s path and query on the agent. */
  private URI target(Request request) {
    String query = request.getHttpURI().getQuery();
    return base.resolve(request.getHttpURI().getPath() + (query == null ? "" : "?" + query));
  }

  /** The agent's own headers: its secret, and for whom the request is made. */
  private void onBehalfOf(HttpRequest.Builder forward, Caller caller) {
    forward.header(contractsConstants.HEADER_INTERNAL, secret);
    if (caller.user() != null) {
      forward.header(contractsConstants.HEADER_USER, caller.user());
      forward.header(contractsConstants.HEADER_ROLE, caller.role());
      if (caller.tokenId() != null) {
        forward.header(contractsConstants.HEADER_TOKEN_ID, caller.tokenId());
      }
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

  static String describe(Throwable e) {
    String message = e.getMessage();
    Throwable cause = e.getCause();
    if ((message == null || message.isEmpty()) && cause != null) {
      return describe(cause);
    }
    return message == null || message.isEmpty() ? e.getClass().getSimpleName() : message;
  }
}
