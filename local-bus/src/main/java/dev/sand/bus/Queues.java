package dev.sand.bus;

import java.util.List;

/**
 * Every Redis key of the local bus, built here and nowhere else. One prefix ({@code sand:}) and one
 * template style ({@code sand:<kind>:<field>:...}, fields joined by {@code :}), the same as the
 * Python side's {@code sand.keys}.
 *
 * <table>
 *   <caption>Local bus keys</caption>
 *   <tr><th>key</th><th>Redis type</th><th>holds</th></tr>
 *   <tr><td>{@code sand:q:<app>:<grain>}</td><td>list</td>
 *       <td>events for a grain's worker on this host (LPUSH in, BRPOP out: FIFO)</td></tr>
 *   <tr><td>{@code sand:agent:<host>}</td><td>list</td>
 *       <td>events for the host agent: backups to publish, final results</td></tr>
 *   <tr><td>{@code sand:reply:<frontend>}</td><td>list</td>
 *       <td>RESULT/ERROR events for the synchronous callers of one frontend process</td></tr>
 *   <tr><td>{@code sand:result:<execution>}</td><td>string</td>
 *       <td>an execution's status document (JSON): RUNNING, then SUCCEEDED or FAILED</td></tr>
 *   <tr><td>{@code sand:timers}</td><td>sorted set</td>
 *       <td>workflow timers (ASL Wait): score = due epoch ms, member = encoded TIMER event</td></tr>
 *   <tr><td>{@code sand:app:<app>}</td><td>string</td>
 *       <td>a deployed application's metadata (JSON), written by the host agent</td></tr>
 *   <tr><td>{@code sand:ready:<app>:<grain>}</td><td>string</td>
 *       <td>set (with a TTL) by a grain worker while it takes events</td></tr>
 *   <tr><td>{@code sand:join:<app>:...}, {@code sand:data:<app>:...}</td><td>various</td>
 *       <td>the workflow engine's groups and the data layer; written by grains only</td></tr>
 * </table>
 *
 * <p>All methods are pure and thread-safe; they throw {@link IllegalArgumentException} naming the
 * value when a name breaks the rules of {@link Names}.
 */
public final class Queues {
  /** The prefix of every key SAND owns in Redis. */
  public static final String PREFIX = "sand:";

  private Queues() {}

  /** The local queue of {@code grain} of {@code app}: {@code sand:q:<app>:<grain>}. */
  public static String grain(String app, String grain) {
    return PREFIX + "q:" + Names.requireApp(app) + ":" + Names.requireGrain(grain);
  }

  /** The queue of the host agent of {@code hostId}: {@code sand:agent:<host>}. */
  public static String agent(String hostId) {
    return PREFIX + "agent:" + Names.requireHostId(hostId);
  }

  /** The status document of one execution: {@code sand:result:<execution>}. */
  public static String result(String executionId) {
    return PREFIX + "result:" + Names.requireExecutionId(executionId);
  }

  /** The reply queue of one frontend process: {@code sand:reply:<frontend>}. */
  public static String reply(String frontendId) {
    return PREFIX + "reply:" + Names.requireHostId(frontendId);
  }

  /** Workflow timers of this host: {@code sand:timers}. */
  public static String timers() {
    return PREFIX + "timers";
  }

  /** A deployed application's metadata: {@code sand:app:<app>}. */
  public static String app(String app) {
    return PREFIX + "app:" + Names.requireApp(app);
  }

  /** Set by a grain worker while it is ready: {@code sand:ready:<app>:<grain>}. */
  public static String ready(String app, String grain) {
    return PREFIX + "ready:" + Names.requireApp(app) + ":" + Names.requireGrain(grain);
  }

  /**
   * The key patterns an application's own Redis ACL user may read and write: its queues, readiness
   * keys, workflow groups and data. Nothing of another application matches.
   */
  public static List<String> appOwnedPatterns(String app) {
    String name = Names.requireApp(app);
    return List.of(
        PREFIX + "q:" + name + ":*",
        PREFIX + "ready:" + name + ":*",
        PREFIX + "join:" + name + ":*",
        PREFIX + "data:" + name + ":*");
  }

  /**
   * The key patterns an application's ACL user may only write (push results, backups, timers and
   * execution status), never read: they hold other applications' events too.
   */
  public static List<String> appWriteOnlyPatterns() {
    return List.of(PREFIX + "agent:*", PREFIX + "reply:*", PREFIX + "result:*", PREFIX + "timers");
  }
}
