package dev.sand.frontend;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.sand.bus.redis.LocalBusException;
import dev.sand.contracts.Caller;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.ResultDocument;
import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/apps/{app}/invoke?workflow=W&mode=sync|async&timeout_s=N&name=NAME}: validates
 * the call, queues the INVOKE event through {@link Invoker} and answers. A named start is
 * idempotent ({@link ExecutionNames}).
 *
 * <p>Asynchronous callers get 202 at once. Synchronous callers are answered when the reply
 * dispatcher completes their {@link PendingReplies} future, from that thread: the Jetty thread
 * returns as soon as the event is queued, so waiting calls hold no thread. A call still waiting
 * after its timeout gets 202 with status RUNNING, to poll {@code GET /v1/executions/{id}}.
 *
 * <p>Blocking on the calling thread: reads the (bounded) body and makes one or two Redis round
 * trips. Thread-safe.
 */
final class InvokeRoute {
  private static final Logger LOG = LoggerFactory.getLogger(InvokeRoute.class);

  /** How long a synchronous call waits for its result unless {@code timeout_s} says otherwise. */
  static final Duration DEFAULT_SYNC_TIMEOUT = Duration.ofSeconds(300);

  /** The largest {@code timeout_s} accepted. */
  static final int MAX_SYNC_TIMEOUT_S = 3600;

  static final String EXECUTION_HEADER = "X-Sand-Execution-Id";

  private static final ObjectReader INPUT_READER =
      JsonHttp.MAPPER.reader().with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private final AppHosts hosts;
  private final PendingReplies pending;
  private final int maxPayloadBytes;
  private final ExecutionNames names;

  /**
   * @param maxPayloadBytes the frontend's body limit ({@code frontend.max_payload_kb} in bytes)
   */
  InvokeRoute(HostLinks hosts, PendingReplies pending, int maxPayloadBytes) {
    this.hosts = new AppHosts(hosts);
    this.pending = pending;
    this.maxPayloadBytes = maxPayloadBytes;
    this.names = new ExecutionNames(hosts);
  }

  /** Handles one invocation of {@code app} (the raw path segment); completes {@code callback}. */
  void handle(String app, Caller caller, Request request, Response response, Callback callback) {
    Invocation invocation;
    Duration timeout;
    HostLinks.Target target;
    try {
      Fields query = Request.extractQueryParameters(request);
      target = hosts.find(app, null, caller);
      AppMetadata metadata = target.app();
      boolean sync = mode(query.getValue("mode"));
      String workflow = workflow(metadata, query.getValue("workflow"));
      String entry = metadata.entryGrains().get(workflow);
      if (!metadata.runs(entry)) {
        // placement (decision 0013): this host runs the app but not the grain that takes the
        // workflow's first event; a host that does takes the invocation
        target = hosts.find(app, entry, caller);
      }
      timeout = sync ? timeout(query.getValue("timeout_s")) : Duration.ZERO;
      boolean viaKafka = via(query.getValue("via"));
      String name = name(query.getValue("name"));
      byte[] input = input(request, limit(metadata));
      // a valid W3C traceparent turns tracing on (decision 0019); an invalid one is ignored
      String traceparent = TraceParent.normalize(request.getHeaders().get(TraceParent.HEADER));
      invocation =
          new Invocation(
              Invoker.newId(),
              app,
              workflow,
              metadata.entryGrains().get(workflow),
              input,
              sync,
              viaKafka,
              "1".equals(query.getValue("trace")) || traceparent != null,
              metadata.backups(),
              headers(name, traceparent));
    } catch (Refused e) {
      JsonHttp.error(response, callback, e.status, e.getMessage());
      return;
    }
    if (invocation.name() != null) {
      try {
        Optional<String> existing = names.claim(invocation, caller);
        if (existing.isPresent()) {
          names.answerExisting(existing.get(), invocation.sync(), caller, response, callback);
          return;
        }
      } catch (Refused e) {
        JsonHttp.error(response, callback, e.status, e.getMessage());
        return;
      }
    }

    String id = invocation.executionId();
    CompletableFuture<ResultDocument> result =
        invocation.sync() ? pending.register(id, timeout) : null;
    AppHosts.Outcome outcome = hosts.submit(target, invocation, caller);
    if (outcome instanceof AppHosts.Full full) {
      refuse(invocation, caller, full.busy(), response, callback);
      return;
    }
    if (outcome instanceof AppHosts.Failed failed) {
      pending.abandon(id);
      if (invocation.name() != null) {
        names.release(invocation, caller);
      }
      JsonHttp.error(
          response,
          callback,
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "cannot queue execution of application '" + app + "': " + failed.message());
      return;
    }
    Invoker.Submitted submitted = ((AppHosts.Queued) outcome).submitted();
    response.getHeaders().put(EXECUTION_HEADER, id);
    if (result == null) {
      // 202 once it is on the local bus: an asynchronous invocation after its backup's ack,
      // answered from the thread that queued it (no Jetty thread waits for the broker)
      submitted
          .queued()
          .whenComplete(
              (ok, error) -> {
                if (error == null) {
                  logQueued(invocation);
                  JsonHttp.send(response, callback, HttpStatus.ACCEPTED_202, running(id));
                  return;
                }
                if (invocation.name() != null) {
                  names.release(invocation, caller);
                }
                Throwable cause = error.getCause() != null ? error.getCause() : error;
                JsonHttp.error(
                    response,
                    callback,
                    HttpStatus.SERVICE_UNAVAILABLE_503,
                    "cannot queue execution of application '" + app + "': " + describe(cause));
              });
      return;
    }
    logQueued(invocation);
    // the wait may outlast Jetty's idle timeout; the sync timeout bounds it instead
    request.addIdleTimeoutListener(idle -> false);
    Supplier<CompletableFuture<Void>> backup = submitted.backup();
    result.whenComplete(
        (doc, error) -> {
          submitted.answered().accept(doc != null);
          answer(id, doc, backup, response, callback);
        });
  }

  private static void logQueued(Invocation invocation) {
    // DEBUG: a line per call is a formatted write on every invocation's path; the execution's
    // record and history say the same for every execution (decision 0026)
    LOG.atDebug()
        .addKeyValue("execution_id", invocation.executionId())
        .addKeyValue("app", invocation.app())
        .addKeyValue("workflow", invocation.workflow())
        .addKeyValue("grain", invocation.entryGrain())
        .addKeyValue("mode", invocation.sync() ? "sync" : "async")
        .addKeyValue("via", invocation.viaKafka() ? "kafka" : "local")
        .addKeyValue("input_bytes", invocation.input().length)
        .log("invocation queued");
  }

  private static String describe(Throwable error) {
    return error instanceof java.util.concurrent.TimeoutException
        ? "no acknowledgement from the global bus in " + Invoker.ACK_TIMEOUT.toSeconds() + " s"
        : error.getMessage();
  }

  /**
   * Answers 429 with {@code Retry-After} (admission control, decision 0023): no host that runs the
   * app has room. Nothing of the invocation was queued or backed up; its name, if any, is free.
   */
  private void refuse(
      Invocation invocation,
      Caller caller,
      Admission.Busy busy,
      Response response,
      Callback callback) {
    pending.abandon(invocation.executionId());
    if (invocation.name() != null) {
      names.release(invocation, caller);
    }
    response.getHeaders().put(HttpHeader.RETRY_AFTER, busy.retryAfterS);
    JsonHttp.send(response, callback, HttpStatus.TOO_MANY_REQUESTS_429, busy.body());
  }

  /** The INVOKE event's extra headers: an idempotent start's name, a W3C traceparent. */
  private static Map<String, String> headers(String name, String traceparent) {
    Map<String, String> headers = new java.util.HashMap<>();
    if (name != null) {
      headers.put(ExecutionNames.NAME_HEADER, name);
    }
    if (traceparent != null) {
      headers.put(dev.sand.contracts.Topics.TRACEPARENT_HEADER, traceparent);
    }
    return headers;
  }

  /**
   * Queues execution {@code id} of {@code app} again, asynchronously, with {@code headers} on its
   * INVOKE event (a redrive, decision 0018): on a host that runs the workflow's entry grain, backed
   * up on the global bus before it is queued.
   *
   * @throws Refused 404 when {@code caller} has no such app or workflow now, 503 when no host takes
   *     it
   */
  void resubmit(
      String app,
      String workflow,
      String id,
      byte[] input,
      Map<String, String> headers,
      Caller caller)
      throws Refused {
    HostLinks.Target target = hosts.find(app, null, caller);
    String chosen = workflow(target.app(), workflow);
    String entry = target.app().entryGrains().get(chosen);
    if (!target.app().runs(entry)) {
      target = hosts.find(app, entry, caller);
    }
    Invocation invocation =
        new Invocation(
            id, app, chosen, entry, input, false, false, false, target.app().backups(), headers);
    try {
      // a redrive is rare and answered when queued: waiting for the broker here is fine
      target.link().invoker.submit(invocation).queued().get(15, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "cannot queue execution '"
              + id
              + "' of application '"
              + app
              + "': "
              + describe(e.getCause()));
    } catch (java.util.concurrent.TimeoutException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "cannot queue execution '" + id + "' of application '" + app + "': timed out");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Refused(HttpStatus.SERVICE_UNAVAILABLE_503, "interrupted");
    } catch (LocalBusException | KafkaEntry.EntryException e) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "cannot queue execution '" + id + "' of application '" + app + "': " + e.getMessage());
    }
  }

  /**
   * Answers a synchronous call: with its result, or — when it is still running — with 202 once its
   * backup is on the global bus (503 if the broker did not take it: not accepted, may not finish).
   */
  private static void answer(
      String id,
      ResultDocument doc,
      Supplier<CompletableFuture<Void>> backedUp,
      Response response,
      Callback callback) {
    if (doc == null) {
      backedUp
          .get()
          .orTimeout(10, TimeUnit.SECONDS)
          .whenComplete(
              (ok, error) -> {
                if (error == null) {
                  JsonHttp.send(response, callback, HttpStatus.ACCEPTED_202, running(id));
                } else {
                  JsonHttp.error(
                      response,
                      callback,
                      HttpStatus.SERVICE_UNAVAILABLE_503,
                      "execution '"
                          + id
                          + "' is still running but its backup did not reach the global bus ("
                          + error.getMessage()
                          + "): it may not finish if its host fails");
                }
              });
      return;
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("execution_id", id);
    body.put("status", doc.status().name());
    if (doc.status() == ExecutionStatus.SUCCEEDED) {
      body.put("output", doc.output());
    } else {
      body.put("error", doc.error());
      body.put("cause", doc.cause());
    }
    if (doc.trace() != null) {
      body.put("trace", doc.trace());
    }
    JsonHttp.send(response, callback, HttpStatus.OK_200, body);
  }

  private static Map<String, Object> running(String id) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("execution_id", id);
    body.put("status", ExecutionStatus.RUNNING.name());
    return body;
  }

  /** The execution name of an idempotent start, or null without one. */
  private static String name(String name) throws Refused {
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
  private static boolean via(String via) throws Refused {
    if (via == null || "local".equals(via)) {
      return false;
    }
    if ("kafka".equals(via)) {
      return true;
    }
    throw new Refused(HttpStatus.BAD_REQUEST_400, "via must be local or kafka, got '" + via + "'");
  }

  private static boolean mode(String mode) throws Refused {
    if (mode == null || "sync".equals(mode)) {
      return true;
    }
    if ("async".equals(mode)) {
      return false;
    }
    throw new Refused(HttpStatus.BAD_REQUEST_400, "mode must be sync or async, got '" + mode + "'");
  }

  private static String workflow(AppMetadata app, String requested) throws Refused {
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

  private static Duration timeout(String text) throws Refused {
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

  /** The body limit: the frontend's, or the application's {@code limits.payload_kb} if lower. */
  private int limit(AppMetadata app) {
    int limit = maxPayloadBytes;
    if (app.payloadKb().isPresent()) {
      limit = (int) Math.min(limit, app.payloadKb().getAsInt() * 1024L);
    }
    return limit;
  }

  /** The input document as compact JSON; an empty body is {@code {}}. */
  private static byte[] input(Request request, int limit) throws Refused {
    long length = request.getLength();
    if (length > limit) {
      throw tooLarge(Long.toString(length), limit);
    }
    byte[] body;
    try (InputStream in = Content.Source.asInputStream(request)) {
      // one byte more than allowed tells an over-long body without reading all of it
      body = in.readNBytes(limit + 1);
    } catch (IOException e) {
      throw new Refused(HttpStatus.BAD_REQUEST_400, "cannot read the request body: " + e);
    }
    if (body.length > limit) {
      throw tooLarge("more than " + limit, limit);
    }
    if (isBlank(body)) {
      return "{}".getBytes(java.nio.charset.StandardCharsets.UTF_8);
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

  private static Refused tooLarge(String size, int limit) {
    return new Refused(
        HttpStatus.PAYLOAD_TOO_LARGE_413,
        "request body of "
            + size
            + " bytes exceeds the limit of "
            + limit
            + " bytes; pass large data through the data layer");
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
