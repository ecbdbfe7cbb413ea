package dev.sand.bus;

/**
 * Every Kafka topic name of the global bus, built here and nowhere else.
 *
 * <table>
 *   <caption>Global bus topics</caption>
 *   <tr><th>topic</th><th>key</th><th>holds</th></tr>
 *   <tr><td>{@code sand.<app>.<grain>}</td><td>execution id</td>
 *       <td>events delivered to a grain through the global bus (flag QUEUED); host agents
 *       consume these</td></tr>
 *   <tr><td>{@code sand.backup.<app>.<grain>}</td><td>execution id</td>
 *       <td>backups of a grain's events, flagged PROCESSING then FINISHED (what recovery reads);
 *       kept apart so that delivery consumers do not read every backup</td></tr>
 *   <tr><td>{@code sand.results}</td><td>execution id</td>
 *       <td>final RESULT/ERROR events, read by the frontends</td></tr>
 * </table>
 *
 * <p>Names never contain {@code .} (see {@link Names}), so a topic splits back into app and grain.
 * All methods are pure and thread-safe.
 */
public final class Topics {
  /** The prefix of every topic SAND owns. */
  public static final String PREFIX = "sand.";

  /** The topic of final results: {@code sand.results}. */
  public static final String RESULTS = PREFIX + "results";

  private Topics() {}

  /**
   * The backup topic of {@code grain} of {@code app}: {@code sand.backup.<app>.<grain>}. Three
   * segments after the prefix, so it never equals a delivery topic, whatever the app is called.
   *
   * @throws IllegalArgumentException naming the value when a name breaks the rules of {@link Names}
   */
  public static String backup(String app, String grain) {
    return PREFIX + "backup." + Names.requireApp(app) + "." + Names.requireGrain(grain);
  }

  /**
   * The delivery topic of {@code grain} of {@code app}: {@code sand.<app>.<grain>}.
   *
   * @throws IllegalArgumentException naming the value when a name breaks the rules of {@link Names}
   */
  public static String grain(String app, String grain) {
    return PREFIX + Names.requireApp(app) + "." + Names.requireGrain(grain);
  }
}
