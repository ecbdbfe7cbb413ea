package dev.sand.agent;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.agent.apps.DeployException;
import dev.sand.contracts.Caller;
import dev.sand.contracts.ExecutionStatus;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.StoreException;
import dev.sand.store.cassandra.CassandraStore;
import java.util.Optional;
import java.util.function.Supplier;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * {@code GET /v1/executions/<id>}: an execution's end as the global data layer recorded it, for
 * frontends whose Redis no longer holds it (forgotten after an hour, or on a host that died). The
 * answer is the result document of a SUCCEEDED or FAILED execution; 404 when none is recorded, or
 * when it is an execution of an app the caller may not use.
 */
final class ExecutionsHandler extends Handler.Abstract {
  static final String PREFIX = "/v1/executions/";

  private final Supplier<CassandraStore> cassandra;
  private final Ownership ownership;

  ExecutionsHandler(Supplier<CassandraStore> cassandra, Ownership ownership) {
    this.cassandra = cassandra;
    this.ownership = ownership;
  }

  /** Whether {@code path} belongs to this handler. */
  static boolean owns(String path) {
    return path.startsWith(PREFIX);
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String id = Request.getPathInContext(request).substring(PREFIX.length());
    if (!"GET".equals(request.getMethod())) {
      JsonHttp.error(response, callback, 405, "only GET is allowed on " + PREFIX + "<id>");
      return true;
    }
    try {
      Names.requireExecutionId(id);
    } catch (IllegalArgumentException e) {
      JsonHttp.error(response, callback, 400, e.getMessage());
      return true;
    }
    CassandraStore store = cassandra.get();
    if (store == null) {
      JsonHttp.error(response, callback, 503, "the global data layer is not connected yet");
      return true;
    }
    Optional<ExecutionRecord> found;
    try {
      found = store.findExecution(id);
    } catch (StoreException e) {
      JsonHttp.error(response, callback, 503, e.getMessage());
      return true;
    }
    try {
      // another user's execution is answered as a missing one (decision 0017)
      Caller caller = InternalAuth.callerOf(request);
      if (found.isPresent()
          && !caller.admin()
          && !caller.mayUse(ownership.owner(found.get().app()))) {
        found = Optional.empty();
      }
    } catch (DeployException e) {
      JsonHttp.error(response, callback, 503, e.getMessage());
      return true;
    }
    if (found.isEmpty()) {
      JsonHttp.error(response, callback, 404, "no execution '" + id + "' is recorded");
      return true;
    }
    JsonHttp.send(response, callback, 200, document(found.get()).toJson());
    return true;
  }

  static ResultDocument document(ExecutionRecord record) {
    JsonNode output = null;
    if (record.status() == ExecutionStatus.SUCCEEDED && record.output() != null) {
      try {
        output = JsonHttp.MAPPER.readTree(record.output());
      } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
        output = JsonHttp.MAPPER.getNodeFactory().textNode(record.output());
      }
    }
    long finished = record.finishedAt() == null ? 0 : record.finishedAt().toEpochMilli();
    return new ResultDocument(
        record.executionId(),
        record.app(),
        record.workflow(),
        record.status(),
        0,
        finished,
        output,
        record.error(),
        record.error() == null ? null : record.cause() == null ? "" : record.cause(),
        null);
  }
}
