package dev.sand.frontend;

import dev.sand.bus.redis.LocalBusException;
import dev.sand.contracts.Caller;
import dev.sand.contracts.Names;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import org.eclipse.jetty.http.HttpStatus;

/**
 * Which host takes an invocation: one that runs the app (and its workflow's entry grain), in
 * rotation; the next one when the chosen host's Redis fails or it is at its admission bound
 * (decision 0023). Thread-safe; blocks on Redis.
 */
final class AppHosts {
  /** How a submission ended. */
  sealed interface Outcome permits Queued, Full, Failed {}

  /** Admitted by a host: queued, or (asynchronous) to be queued once backed up. */
  record Queued(Invoker.Submitted submitted) implements Outcome {}

  /** Every host that runs the app is at a bound: the first refusal. Nothing was queued. */
  record Full(Admission.Busy busy) implements Outcome {}

  /** No host could queue it: the last host's error. Nothing was queued. */
  record Failed(String message) implements Outcome {}

  private final HostLinks hosts;

  AppHosts(HostLinks hosts) {
    this.hosts = hosts;
  }

  /**
   * Queues {@code invocation} on {@code first}, else on another host that runs its app and entry
   * grain: after a host whose Redis failed (it is suspected for a second) or one at its admission
   * bound. A Kafka refusal is final (another host's broker is the same one).
   */
  Outcome submit(HostLinks.Target first, Invocation invocation, Caller caller) {
    HostLinks.Target target = first;
    Set<HostLinks.Link> full = new HashSet<>();
    Admission.Busy busy = null;
    for (int tries = 1; ; tries++) {
      try {
        return new Queued(target.link().invoker.admit(invocation, target.app().queuedGrains()));
      } catch (Admission.Busy e) {
        busy = busy == null ? e : busy;
        full.add(target.link());
        Optional<HostLinks.Target> other =
            tries < hosts.size()
                ? another(invocation.app(), invocation.entryGrain(), caller, full)
                : Optional.empty();
        if (other.isEmpty()) {
          return new Full(busy);
        }
        target = other.get();
      } catch (LocalBusException | KafkaEntry.EntryException e) {
        boolean hostFailed = e instanceof LocalBusException;
        if (hostFailed) {
          target.link().suspect();
        }
        Optional<HostLinks.Target> other =
            hostFailed && tries < hosts.size()
                ? another(invocation.app(), invocation.entryGrain(), caller, full)
                : Optional.empty();
        if (other.isEmpty()) {
          return new Failed(e.getMessage());
        }
        target = other.get();
      }
    }
  }

  /**
   * A host that runs {@code app} (and, unless null, its grain {@code entry}), in rotation, and its
   * metadata; refused as not deployed when {@code caller} may not use it.
   *
   * @throws Refused 404 for an app the caller has not, 503 when no reachable host runs {@code
   *     entry} or Redis fails, 500 when the app's metadata is unusable
   */
  HostLinks.Target find(String app, String entry, Caller caller) throws Refused {
    return find(app, entry, caller, Set.of());
  }

  private Optional<HostLinks.Target> another(
      String app, String entry, Caller caller, Set<HostLinks.Link> skip) {
    try {
      return Optional.of(find(app, entry, caller, skip));
    } catch (Refused refused) {
      return Optional.empty();
    }
  }

  private HostLinks.Target find(String app, String entry, Caller caller, Set<HostLinks.Link> skip)
      throws Refused {
    try {
      Names.requireApp(app);
    } catch (IllegalArgumentException e) {
      throw new Refused(
          HttpStatus.NOT_FOUND_404, "no application '" + app + "': " + e.getMessage());
    }
    Optional<HostLinks.Target> metadata;
    try {
      metadata =
          hosts.inTurn(
              app,
              link ->
                  skip.contains(link)
                      ? Optional.empty()
                      : link.catalog
                          .find(app)
                          // another user's app is answered as a missing one (decision 0017)
                          .filter(m -> caller.mayUse(m.owner()))
                          .filter(m -> entry == null || m.runs(entry))
                          .map(m -> new HostLinks.Target(link, m)));
    } catch (LocalBusException e) {
      throw new Refused(HttpStatus.SERVICE_UNAVAILABLE_503, e.getMessage());
    } catch (IllegalStateException e) {
      throw new Refused(HttpStatus.INTERNAL_SERVER_ERROR_500, e.getMessage());
    }
    if (metadata.isEmpty() && entry != null) {
      throw new Refused(
          HttpStatus.SERVICE_UNAVAILABLE_503,
          "application '"
              + app
              + "': no reachable host runs its entry grain '"
              + entry
              + "' (see its placement)");
    }
    return metadata.orElseThrow(
        () -> new Refused(HttpStatus.NOT_FOUND_404, "no application '" + app + "' is deployed"));
  }
}
