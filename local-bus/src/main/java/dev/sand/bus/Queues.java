package dev.sand.bus;

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
 *   <tr><td>{@code sand:result:<execution>}</td><td>list</td>
 *       <td>the result event of one execution, for the frontend waiting on it</td></tr>
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

  /** The result queue of one execution: {@code sand:result:<execution>}. */
  public static String result(String executionId) {
    return PREFIX + "result:" + Names.requireExecutionId(executionId);
  }
}
