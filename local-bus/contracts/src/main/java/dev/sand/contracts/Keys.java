package dev.sand.contracts;

import java.util.List;
import java.util.Map;

/**
 * Every Redis key SAND's Java side uses, built from the templates of {@code contracts.thrift} and
 * nowhere else; the Python side ({@code sand.keys}) builds the same names from the same templates.
 * The layout (key, Redis type, what it holds) is documented in the IDL and in {@code
 * docs/architecture.md}.
 *
 * <p>All methods are pure and thread-safe; they throw {@link IllegalArgumentException} naming the
 * value when a name breaks the rules of {@link Names}.
 */
public final class Keys {
  /** The prefix of every key SAND owns in Redis. */
  public static final String PREFIX = "sand:";

  private Keys() {}

  /** The local queue of {@code grain} of {@code app}: {@code sand:q:<app>:<grain>}. */
  public static String grain(String app, String grain) {
    return Template.fill(
        contractsConstants.KEY_QUEUE,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }

  /** The queue of the host agent of {@code hostId}: {@code sand:agent:<host>}. */
  public static String agent(String hostId) {
    return Template.fill(contractsConstants.KEY_AGENT, Map.of("host", Names.requireHostId(hostId)));
  }

  /** The result document of one execution: {@code sand:result:<execution>}. */
  public static String result(String executionId) {
    return Template.fill(
        contractsConstants.KEY_RESULT, Map.of("execution", Names.requireExecutionId(executionId)));
  }

  /** The reply queue of one frontend process: {@code sand:reply:<frontend>}. */
  public static String reply(String frontendId) {
    return Template.fill(
        contractsConstants.KEY_REPLY, Map.of("frontend", Names.requireHostId(frontendId)));
  }

  /** The incarnation of the host agent that runs on this local bus: {@code sand:incarnation}. */
  public static String incarnation() {
    return contractsConstants.KEY_INCARNATION;
  }

  /** Workflow timers of this host: {@code sand:timers}. */
  public static String timers() {
    return contractsConstants.KEY_TIMERS;
  }

  /** A deployed application's metadata: {@code sand:app:<app>}. */
  public static String app(String app) {
    return Template.fill(contractsConstants.KEY_APP, Map.of("app", Names.requireApp(app)));
  }

  /** A grain's counters, written by its worker (hash): {@code sand:metrics:<app>:<grain>}. */
  public static String metrics(String app, String grain) {
    return Template.fill(
        contractsConstants.KEY_METRICS,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }

  /**
   * Set by a grain worker whose grain cannot be imported, beside its readiness key and with the
   * same TTL, holding why: {@code sand:broken:<app>:<grain>}. Written with the app's ACL user, so
   * it is the app's word about itself.
   */
  public static String broken(String app, String grain) {
    return Template.fill(
        contractsConstants.KEY_BROKEN,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }

  /** Set by a grain worker while it is ready: {@code sand:ready:<app>:<grain>}. */
  public static String ready(String app, String grain) {
    return Template.fill(
        contractsConstants.KEY_READY,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }

  /**
   * The global-data requests of {@code app}'s grains to their host agent: {@code
   * sand:gdata:<app>:requests}. Only {@code app}'s ACL user (and SAND's own) may push here, so the
   * key names the app a request comes from.
   */
  public static String dataRequests(String app) {
    return Template.fill(
        contractsConstants.KEY_GDATA_REQUESTS, Map.of("app", Names.requireApp(app)));
  }

  /** The reply to one global-data request: {@code sand:gdata:<app>:reply:<request>}. */
  public static String dataReply(String app, String requestId) {
    return Template.fill(
        contractsConstants.KEY_GDATA_REPLY,
        Map.of("app", Names.requireApp(app), "request", Names.requireDataRequest(requestId)));
  }

  /**
   * The executions of {@code app} stopped on request: {@code sand:aborted:<app>} (sorted set,
   * member = execution id, score = epoch ms of the stop). Read-only for the app's ACL user.
   */
  public static String aborted(String app) {
    return Template.fill(contractsConstants.KEY_ABORTED, Map.of("app", Names.requireApp(app)));
  }

  /** The key patterns {@code app}'s ACL user may only read: its stopped executions. */
  public static List<String> appReadOnlyPatterns(String app) {
    Map<String, String> values = Map.of("app", Names.requireApp(app));
    return contractsConstants.ACL_APP_READ_ONLY.stream()
        .map(t -> Template.fill(t, values))
        .toList();
  }

  /** The Redis ACL user of {@code app}: {@code sand-app-<app>}. */
  public static String redisUser(String app) {
    return Template.fill(contractsConstants.REDIS_APP_USER, Map.of("app", Names.requireApp(app)));
  }

  /**
   * The key patterns an application's own Redis ACL user may read and write: its queues, readiness
   * keys, workflow groups and data. Nothing of another application matches.
   */
  public static List<String> appOwnedPatterns(String app) {
    Map<String, String> values = Map.of("app", Names.requireApp(app));
    return contractsConstants.ACL_APP_OWNED.stream().map(t -> Template.fill(t, values)).toList();
  }

  /**
   * The key patterns an application's ACL user may only write (push results, backups, timers and
   * result documents), never read: they hold other applications' events too.
   */
  public static List<String> appWriteOnlyPatterns() {
    return List.copyOf(contractsConstants.ACL_APP_WRITE_ONLY);
  }
}
