package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.contracts.Caller;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.ResultDocument;
import dev.sand.service.JsonHttp;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code POST /v1/apps/{app}/invoke?workflow=W&mode=sync|async&timeout_s=N&name=NAME}: validates
 * the call ({@link InvokeParams}), queues the INVOKE event through {@link Invoker} and answers. A
 * named start is idempotent ({@link ExecutionNames}).
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

  static final String EXECUTION_HEADER = "X-Sand-Execution-Id";

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
      boolean sync = InvokeParams.mode(query.getValue("mode"));
      String workflow = InvokeParams.workflow(metadata, query.getValue("workflow"));
      String entry = metadata.entryGrains().get(workflow);
      if (!metadata.runs(entry)) {
        // placement (decision 0013): this host runs the app but not the grain that takes the
        // workflow's first event; a host that does takes the invocation
        target = hosts.find(app, entry, caller);
      }
      timeout = sync ? InvokeParams.timeout(query.getValue("timeout_s")) : Duration.ZERO;
      boolean viaKafka = InvokeParams.via(query.getValue("via"));
      String name = InvokeParams.name(query.getValue("name"));
      byte[] input = InvokeParams.input(request, InvokeParams.limit(metadata, maxPayloadBytes));
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
    // our wait ran out, or the producer's delivery timeout (the same length) did first
    boolean timedOut =
        error instanceof java.util.concurrent.TimeoutException
            || error.getCause() instanceof org.apache.kafka.common.errors.TimeoutException;
    return timedOut
        ? "no acknowledgement from the global bus in " + KafkaEntry.ACK_TIMEOUT.toSeconds() + " s"
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
    String chosen = InvokeParams.workflow(target.app(), workflow);
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
}
