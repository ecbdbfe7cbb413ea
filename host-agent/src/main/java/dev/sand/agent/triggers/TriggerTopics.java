package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import dev.sand.agent.apps.DeployException;
import dev.sand.bridge.kafka.KafkaBridge;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * Refuses a deploy whose topic triggers name topics that are not the app's ({@link #ownTopic}) or
 * that the cluster's Kafka does not have (decision 0034): a consumer of a missing topic would wait
 * forever, or create it on a broker that auto-creates topics. The user creates the topic (with the
 * partitions they want) first.
 */
public final class TriggerTopics implements Consumer<JsonNode> {
  private static final long TIMEOUT_MS = 5000;

  private final Supplier<KafkaBridge> kafka;

  /**
   * Whether {@code app} may read {@code topic}: its own name or {@code <app>.<name>}. App names are
   * owned by their users (decision 0017); topic names are not, so without this rule one tenant's
   * trigger could read another's topic.
   */
  public static boolean ownTopic(String app, String topic) {
    return topic.equals(app) || topic.startsWith(app + ".");
  }

  public TriggerTopics(Supplier<KafkaBridge> kafka) {
    this.kafka = kafka;
  }

  /**
   * @throws DeployException (INVALID) naming each trigger whose topic is missing; (UNAVAILABLE)
   *     when Kafka does not answer
   */
  @Override
  public void accept(JsonNode description) {
    Map<String, String> wanted = new LinkedHashMap<>();
    for (JsonNode t : description.path("triggers")) {
      if ("topic".equals(t.path("kind").asText())) {
        wanted.put(t.path("name").asText(), t.path("topic").asText());
      }
    }
    if (wanted.isEmpty()) {
      return;
    }
    KafkaBridge bridge = kafka.get();
    if (bridge == null) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE,
          "kafka is not connected yet: the topics of the app's triggers cannot be checked");
    }
    Set<String> topics;
    try {
      topics = bridge.admin().listTopics().names().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new DeployException(
          DeployException.Reason.UNAVAILABLE,
          "kafka does not answer: the topics of the app's triggers cannot be checked (" + e + ")");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new DeployException(DeployException.Reason.UNAVAILABLE, "interrupted");
    }
    List<String> problems = new ArrayList<>();
    String app = description.path("name").asText();
    wanted.forEach(
        (trigger, topic) -> {
          if (!ownTopic(app, topic)) {
            problems.add(
                "app.yaml: triggers."
                    + trigger
                    + ".topic: '"
                    + topic
                    + "' is not a topic of app '"
                    + app
                    + "': a topic trigger reads '"
                    + app
                    + "' or '"
                    + app
                    + ".<name>' only (app names are owned, topic names are not)");
          } else if (!topics.contains(topic)) {
            problems.add(
                "app.yaml: triggers."
                    + trigger
                    + ".topic: no topic '"
                    + topic
                    + "' on the cluster's Kafka (create it first, e.g. kafka-topics.sh --create"
                    + " --topic "
                    + topic
                    + ")");
          }
        });
    if (!problems.isEmpty()) {
      throw new DeployException(DeployException.Reason.INVALID, problems);
    }
  }
}
