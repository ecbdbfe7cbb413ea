package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import dev.sand.service.JsonHttp;
import java.util.Optional;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code GET /v1/executions/{id}} and {@code GET /v1/executions/{id}/history} ({@link Routes}): the
 * status document in Redis, else the execution's record in Cassandra (through the host agent).
 * Redis first: it is what a client polls, and it is there at once; {@code input}, {@code name} and
 * {@code redrive_count} appear in the answer once Redis forgot the document and the record answers
 * (decision 0018). An id that cannot name an execution, or another user's, is 404 as a missing one.
 */
final class ExecutionReads {
  private final HostLinks hosts;

  ExecutionReads(HostLinks hosts) {
    this.hosts = hosts;
  }

  /** An execution's history: the agent reads it (and checks who may see it). */
  void history(String id, Caller caller, Request request, Response response, Callback callback) {
    if (validExecutionId(id, response, callback)) {
      hosts.agent().forward(request, response, callback, caller);
    }
  }

  /** True when {@code id} can name an execution; otherwise answers 404 as for a missing one. */
  private static boolean validExecutionId(String id, Response response, Callback callback) {
    try {
      Names.requireExecutionId(id);
      return true;
    } catch (IllegalArgumentException e) {
      JsonHttp.error(
          response,
          callback,
          HttpStatus.NOT_FOUND_404,
          "no execution '" + id + "': " + e.getMessage());
      return false;
    }
  }

  void execution(String id, Caller caller, Request request, Response response, Callback callback) {
    if (!validExecutionId(id, response, callback)) {
      return;
    }
    // The document is in the Redis of the host that ran the execution's last grain (a RUNNING
    // one on its entry host while it runs). A host that is away may hold the finished one: then
    // the record in Cassandra (through an agent) decides, and RUNNING is the fallback.
    Optional<byte[]> finished = Optional.empty();
    Optional<byte[]> running = Optional.empty();
    LocalBusException failure = null;
    boolean someHostAway = false;
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        someHostAway = true;
        continue;
      }
      try {
        Optional<byte[]> found = bus.get(Keys.result(id));
        if (found.isPresent() && running(found.get())) {
          running = found;
        } else if (found.isPresent()) {
          finished = found;
        }
      } catch (LocalBusException e) {
        failure = e;
        someHostAway = true;
      }
    }
    Optional<byte[]> doc = finished;
    if (doc.isEmpty() && running.isPresent()) {
      Optional<byte[]> stillRunning = running;
      doc =
          someHostAway
              ? hosts.agent().get("/v1/executions/" + id, caller).or(() -> stillRunning)
              : running;
    }
    if (doc.isEmpty() && failure != null && hosts.size() == 1) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, failure.getMessage());
      return;
    }
    if (doc.isPresent() && !caller.admin()) {
      Optional<Boolean> mayUse = mayUseAppOf(doc.get(), caller);
      if (mayUse.isEmpty()) {
        // its app is no longer deployed: the agent knows the app's owner (and the record)
        doc = Optional.empty();
      } else if (!mayUse.get()) {
        JsonHttp.error(
            response, callback, HttpStatus.NOT_FOUND_404, "no execution '" + id + "' is recorded");
        return;
      }
    }
    if (doc.isEmpty()) {
      // Redis forgot it (after an hour) or never had it (its host died): the host agent reads
      // the execution records of the global data layer
      hosts.agent().forward(request, response, callback, caller);
      return;
    }
    response.getHeaders().put(InvokeRoute.EXECUTION_HEADER, id);
    JsonHttp.sendJson(response, callback, HttpStatus.OK_200, doc.get());
  }

  /**
   * Whether {@code caller} may see the execution whose document is {@code doc}, by the owner of its
   * app in the app's metadata; empty when no host has the app's metadata.
   */
  private Optional<Boolean> mayUseAppOf(byte[] doc, Caller caller) {
    String app;
    try {
      app = Names.requireApp(ResultDocument.parse(doc).app());
    } catch (IllegalArgumentException e) {
      // not a document of an app anybody owns: for admins only
      return Optional.of(false);
    }
    try {
      return hosts.first(link -> link.catalog.find(app)).map(m -> caller.mayUse(m.owner()));
    } catch (LocalBusException | IllegalStateException e) {
      return Optional.empty();
    }
  }

  private static boolean running(byte[] doc) {
    try {
      return !ResultDocument.parse(doc).finished();
    } catch (IllegalArgumentException e) {
      return false;
    }
  }
}
