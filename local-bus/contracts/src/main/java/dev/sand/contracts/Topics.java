package dev.sand.contracts;

import java.util.Map;
import java.util.regex.Pattern;

/**
 * Every Kafka topic and consumer group of the global bus, built from the templates of {@code
 * contracts.thrift} and nowhere else. Names never contain {@code .} (see {@link Names}), so a topic
 * splits back into app and grain. All methods are pure and thread-safe.
 */
public final class Topics {
  /**
   * The topic of final RESULT/ERROR events: {@code sand.results}. The host agents publish to it and
   * keep it for recovery; nothing reads it yet (frontends answer from Redis).
   */
  public static final String RESULTS = contractsConstants.TOPIC_RESULTS;

  /** The consumer group of the host agents' ingress. */
  public static final String HOSTS_GROUP = contractsConstants.KAFKA_GROUP_HOSTS;

  /**
   * Every delivery topic {@code sand.<app>.<grain>}: exactly two names after the prefix, so neither
   * {@code sand.results} nor a backup topic matches.
   */
  public static final Pattern GRAIN_TOPICS =
      Pattern.compile(
          Pattern.quote(contractsConstants.TOPIC_GRAIN)
              .replace("{app}", "\\E(?:" + contractsConstants.NAME_APP + ")\\Q")
              .replace("{grain}", "\\E(?:" + contractsConstants.NAME_GRAIN + ")\\Q"));

  private Topics() {}

  /**
   * The backup topic of {@code grain} of {@code app}: {@code sand.backup.<app>.<grain>}. Three
   * segments after the prefix, so it never equals a delivery topic, whatever the app is called.
   *
   * @throws IllegalArgumentException naming the value when a name breaks the rules of {@link Names}
   */
  public static String backup(String app, String grain) {
    return Template.fill(
        contractsConstants.TOPIC_BACKUP,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }

  /**
   * The delivery topic of {@code grain} of {@code app}: {@code sand.<app>.<grain>}.
   *
   * @throws IllegalArgumentException naming the value when a name breaks the rules of {@link Names}
   */
  public static String grain(String app, String grain) {
    return Template.fill(
        contractsConstants.TOPIC_GRAIN,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }
}
