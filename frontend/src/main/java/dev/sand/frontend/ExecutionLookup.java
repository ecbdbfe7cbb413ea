package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.bus.redis.RedisLocalBus;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Keys;
import dev.sand.contracts.Names;
import dev.sand.contracts.ResultDocument;
import java.util.Optional;
import org.eclipse.jetty.http.HttpStatus;

/**
 * Finds an execution's document for a caller: the newest in the hosts' Redis when the caller may
 * use the app, else the execution's record through a host agent. Blocking (Redis, HTTP);
 * thread-safe.
 */
final class ExecutionLookup {
  private final HostLinks hosts;

  ExecutionLookup(HostLinks hosts) {
    this.hosts = hosts;
  }

  /**
   * The execution's document: in a host's Redis (a finished one wins over a RUNNING one), else its
   * record in the global data layer; 404 for a missing execution or another user's.
   */
  ResultDocument find(String id, Caller caller) throws Refused {
    try {
      Names.requireExecutionId(id);
    } catch (IllegalArgumentException e) {
      throw new Refused(HttpStatus.NOT_FOUND_404, "no execution '" + id + "': " + e.getMessage());
    }
    ResultDocument found = null;
    for (HostLinks.Link link : hosts.all()) {
      RedisLocalBus bus = link.bus;
      if (bus == null) {
        continue;
      }
      try {
        Optional<byte[]> raw = bus.get(Keys.result(id));
        if (raw.isPresent()) {
          ResultDocument doc = ResultDocument.parse(raw.get());
          if (found == null || doc.finished()) {
            found = doc;
          }
        }
      } catch (LocalBusException | IllegalArgumentException e) {
        // an unreachable host or an unreadable document: the record decides
      }
    }
    if (found != null && !caller.admin()) {
      String app = found.app();
      Optional<Boolean> mayUse;
      try {
        mayUse = hosts.first(link -> link.catalog.find(app)).map(m -> caller.mayUse(m.owner()));
      } catch (LocalBusException | IllegalStateException e) {
        mayUse = Optional.empty();
      }
      if (mayUse.isEmpty() || !mayUse.get()) {
        found = null; // no deployed app of theirs: the agent judges from the record
      }
    }
    if (found == null) {
      Optional<byte[]> recorded = hosts.agent().get("/v1/executions/" + id, caller);
      if (recorded.isPresent()) {
        try {
          found = ResultDocument.parse(recorded.get());
        } catch (IllegalArgumentException e) {
          throw new Refused(HttpStatus.BAD_GATEWAY_502, "unreadable record: " + e.getMessage());
        }
      }
    }
    if (found == null) {
      throw new Refused(HttpStatus.NOT_FOUND_404, "no execution '" + id + "' is recorded");
    }
    return found;
  }
}
