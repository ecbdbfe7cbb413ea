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
   * The topic of final RESULT/ERROR events: {@code sand.results}. The host agents publish to it;
   * consumer group {@link #RECORDS_GROUP} records each execution in Cassandra.
   */
  public static final String RESULTS = contractsConstants.TOPIC_RESULTS;

  /**
   * The topic of HISTORY events (an execution's per-state history, decision 0018): {@code
   * sand.history}. The host agents publish to it; consumer group {@link #RECORDS_GROUP} records the
   * events in Cassandra.
   */
  public static final String HISTORY = contractsConstants.TOPIC_HISTORY;

  /**
   * The consumer group that records {@link #RESULTS} and {@link #HISTORY} in Cassandra, both topics
   * in one consumer (decision 0030).
   */
  public static final String RECORDS_GROUP = contractsConstants.KAFKA_GROUP_RECORDS;

  /** The consumer group of the host agents' global bus (every grain topic of their apps). */
  public static final String HOSTS_GROUP = contractsConstants.KAFKA_GROUP_HOSTS;

  /** The record header naming the incarnation of the host agent whose host processes an event. */
  public static final String INCARNATION_HEADER = contractsConstants.HEADER_INCARNATION;

  /**
   * The event header on a frontend's copy for the agent queue whose backup the frontend already
   * published: the agent tracks it but does not publish it again.
   */
  public static final String BACKED_UP_HEADER = contractsConstants.HEADER_BACKED_UP;

  /**
   * The event header on the agent's PROCESSING copy of an event it took from the global bus (the
   * event is on the broker already: its FINISHED flag is always sent).
   */
  public static final String REDELIVERED_HEADER = contractsConstants.HEADER_REDELIVERED;

  /** Event header: the W3C traceparent of a traced execution's next span's parent. */
  public static final String TRACEPARENT_HEADER = contractsConstants.HEADER_TRACEPARENT;

  /**
   * The event header on a grain instance's FINISHED copy: the number of records it pushed to the
   * agent queue just before, in the same push; the flag waits for those only.
   */
  public static final String PRODUCED_HEADER = contractsConstants.HEADER_PRODUCED;

  /**
   * The record header on an event's FINISHED flag listing the global data its instance wrote (key,
   * size, sha256 per put; key and {@code deleted} per delete), a JSON list; also the name of the
   * event header the instance hands it over in.
   */
  public static final String DATA_HEADER = contractsConstants.HEADER_DATA;

  /**
   * Every grain topic {@code sand.<app>.<grain>}: exactly two names after the prefix, so {@code
   * sand.results} does not match.
   */
  public static final Pattern GRAIN_TOPICS =
      Pattern.compile(
          Pattern.quote(contractsConstants.TOPIC_GRAIN)
              .replace("{app}", "\\E(?:" + contractsConstants.NAME_APP + ")\\Q")
              .replace("{grain}", "\\E(?:" + contractsConstants.NAME_GRAIN + ")\\Q"));

  private Topics() {}

  /**
   * The topic of {@code grain} of {@code app}: {@code sand.<app>.<grain>}.
   *
   * @throws IllegalArgumentException naming the value when a name breaks the rules of {@link Names}
   */
  public static String grain(String app, String grain) {
    return Template.fill(
        contractsConstants.TOPIC_GRAIN,
        Map.of("app", Names.requireApp(app), "grain", Names.requireGrain(grain)));
  }
}
