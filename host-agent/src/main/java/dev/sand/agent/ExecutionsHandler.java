package dev.sand.agent;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.agent.refusal.Refusal;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Names;
import dev.sand.service.JsonHttp;
import dev.sand.store.ExecutionQuery;
import dev.sand.store.ExecutionRecord;
import dev.sand.store.ExecutionSummary;
import dev.sand.store.HistoryEntry;
import dev.sand.store.StoreException;
import dev.sand.store.cassandra.CassandraStore;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.Fields;

/**
 * The execution records of the global data layer (decision 0018), read for frontends:
 *
 * <ul>
 *   <li>{@code GET /v1/executions?app=&status=&since=&limit=&page=}: {@code {"executions":
 *       [summary...], "next_page": token|null}}, newest first, of the apps the caller may use (all
 *       for admins); 400 naming a bad parameter
 *   <li>{@code GET /v1/executions/<id>}: the execution's result document, RUNNING ones included,
 *       with its input, name, trigger and redrive count when recorded
 *   <li>{@code GET /v1/executions/<id>/history?limit=&page=}: {@code {"execution_id", "events":
 *       [...], "next_page", "truncated"}}
 * </ul>
 *
 * <p>An execution that is not recorded, or belongs to an app the caller may not use, is answered
 * 404 with the same text (decision 0017). 503 while Cassandra cannot answer. Blocking handler.
 */
final class ExecutionsHandler extends Handler.Abstract {
  static final String ROOT = "/v1/executions";
  static final String PREFIX = ROOT + "/";
  private static final String HISTORY = "/history";

  private final Supplier<CassandraStore> cassandra;
  private final Ownership ownership;

  ExecutionsHandler(Supplier<CassandraStore> cassandra, Ownership ownership) {
    this.cassandra = cassandra;
    this.ownership = ownership;
  }

  /** Its routes (Jetty path specs, {@link AgentRoutes}). */
  static final String[] PATHS = {ROOT + "/*"};

  @Override
  public boolean handle(Request request, Response response, Callback callback) {
    String path = Request.getPathInContext(request);
    if (!"GET".equals(request.getMethod())) {
      response.getHeaders().put("Allow", "GET");
      JsonHttp.error(
          response, callback, 405, request.getMethod() + " not allowed on " + path + " (GET)");
      return true;
    }
    Caller caller = InternalAuth.callerOf(request);
    Fields query = Request.extractQueryParameters(request);
    try {
      CassandraStore store = cassandra.get();
      if (store == null) {
        throw new ExecutionRefused(
            Refusal.Reason.UNAVAILABLE, "the global data layer is not connected yet");
      }
      if (path.equals(ROOT)) {
        list(store, caller, query, response, callback);
        return true;
      }
      String rest = path.substring(PREFIX.length());
      boolean history = rest.endsWith(HISTORY);
      String id = history ? rest.substring(0, rest.length() - HISTORY.length()) : rest;
      try {
        Names.requireExecutionId(id);
      } catch (IllegalArgumentException e) {
        throw new ExecutionRefused(Refusal.Reason.NOT_FOUND, "no such path: " + path);
      }
      Optional<ExecutionRecord> found = visible(store.executions().find(id), caller);
      if (found.isEmpty()) {
        throw new ExecutionRefused(
            Refusal.Reason.NOT_FOUND, "no execution '" + id + "' is recorded");
      } else if (history) {
        history(store, id, query, response, callback);
      } else {
        JsonHttp.send(response, callback, 200, ExecutionJson.document(found.get()));
      }
    } catch (Refusal e) {
      Refusals.answer(response, callback, e);
    } catch (IllegalArgumentException e) {
      // a bad parameter (ExecutionParams, PageTokens)
      Refusals.answer(
          response, callback, new ExecutionRefused(Refusal.Reason.INVALID, e.getMessage()));
    } catch (StoreException e) {
      Refusals.answer(
          response, callback, new ExecutionRefused(Refusal.Reason.UNAVAILABLE, e.getMessage()));
    }
    return true;
  }

  private void list(
      CassandraStore store, Caller caller, Fields query, Response response, Callback callback) {
    ExecutionParams.Listing params = ExecutionParams.listing(query::getValue);
    ExecutionQuery.Page page = store.executions().list(params.query(apps(store, caller, params)));
    ArrayNode rows = JsonHttp.MAPPER.createArrayNode();
    for (ExecutionSummary row : page.rows()) {
      rows.add(ExecutionJson.summary(row));
    }
    ObjectNode body = JsonHttp.MAPPER.createObjectNode();
    body.set("executions", rows);
    if (page.next().isPresent()) {
      body.put("next_page", PageTokens.encode(page.next().get()));
    } else {
      body.putNull("next_page");
    }
    JsonHttp.send(response, callback, 200, body);
  }

  /**
   * The apps whose executions {@code caller} lists: the one asked for, if theirs; else theirs
   * (every app on record for an admin: claimed names and deployments).
   */
  private Set<String> apps(CassandraStore store, Caller caller, ExecutionParams.Listing params) {
    if (params.app().isPresent()) {
      String app = params.app().get();
      // another user's app lists nothing, as an app without executions does
      return caller.admin() || caller.mayUse(ownership.owner(app)) ? Set.of(app) : Set.of();
    }
    Set<String> apps = new TreeSet<>();
    store
        .access()
        .owners()
        .forEach(
            (app, owner) -> {
              if (caller.mayUse(Optional.ofNullable(owner))) {
                apps.add(app);
              }
            });
    if (caller.admin()) {
      apps.addAll(store.appVersions().keySet());
    }
    return apps;
  }

  private void history(
      CassandraStore store, String id, Fields query, Response response, Callback callback) {
    ExecutionParams.History params = ExecutionParams.history(query::getValue);
    HistoryEntry.Page page = store.history().page(id, params.after(), params.limit());
    ArrayNode events = JsonHttp.MAPPER.createArrayNode();
    List<HistoryEntry> entries = page.entries();
    entries.forEach(entry -> events.add(ExecutionJson.event(entry)));
    ObjectNode body = JsonHttp.MAPPER.createObjectNode();
    body.put("execution_id", id);
    body.set("events", events);
    if (page.next() != null) {
      body.put("next_page", PageTokens.encode(page.next()));
    } else {
      body.putNull("next_page");
    }
    body.put("truncated", page.truncated());
    JsonHttp.send(response, callback, 200, body);
  }

  /** {@code found} when {@code caller} may see it; another user's execution is a missing one. */
  private Optional<ExecutionRecord> visible(Optional<ExecutionRecord> found, Caller caller) {
    if (found.isEmpty() || caller.admin()) {
      return found;
    }
    String app = found.get().app();
    return app != null && caller.mayUse(ownership.owner(app)) ? found : Optional.empty();
  }
}
