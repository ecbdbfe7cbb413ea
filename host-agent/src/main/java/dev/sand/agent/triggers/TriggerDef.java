package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.util.ArrayList;
import java.util.List;

/**
 * One trigger of a deployed app, as the app's description lists it ({@code app.triggers}, written
 * by the Python validator with every default filled in; decision 0034).
 *
 * @param app the app
 * @param name the trigger's name
 * @param workflow the workflow it starts
 * @param entryGrain that workflow's entry grain (its INVOKE event's target)
 * @param schedule when it fires; null for a topic trigger
 * @param missed what a schedule does with firings missed while no host ran it: {@code run_once} or
 *     {@code skip}
 * @param input each firing's execution input (a schedule's)
 * @param topic the Kafka topic whose records start executions; null for a schedule
 * @param spec the trigger as described (the API shows it as it is)
 */
public record TriggerDef(
    String app,
    String name,
    String workflow,
    String entryGrain,
    Schedule schedule,
    String missed,
    JsonNode input,
    String topic,
    JsonNode spec) {
  /** The policy that starts one execution for the latest firing missed. */
  public static final String RUN_ONCE = "run_once";

  /** Whether this is a schedule (else a topic trigger). */
  public boolean isSchedule() {
    return schedule != null;
  }

  /**
   * The triggers of {@code metadata} (an app's description). A trigger this agent cannot read (an
   * app deployed by a newer validator) is left out and named in {@code problems}.
   */
  public static List<TriggerDef> of(JsonNode metadata, List<String> problems) {
    String app = metadata.path("name").asText();
    List<TriggerDef> all = new ArrayList<>();
    for (JsonNode t : metadata.path("triggers")) {
      String name = t.path("name").asText();
      String workflow = t.path("workflow").asText();
      String entry = metadata.path("workflows").path(workflow).path("entry_grain").asText("");
      if (entry.isEmpty()) {
        problems.add(name + ": workflow '" + workflow + "' has no entry grain");
        continue;
      }
      try {
        String kind = t.path("kind").asText();
        if ("schedule".equals(kind)) {
          Schedule schedule =
              Schedule.parse(t.path("schedule").asText(), t.path("timezone").asText("UTC"));
          JsonNode input = t.has("input") ? t.get("input") : JsonNodeFactory.instance.objectNode();
          all.add(
              new TriggerDef(
                  app,
                  name,
                  workflow,
                  entry,
                  schedule,
                  t.path("missed").asText(RUN_ONCE),
                  input,
                  null,
                  t));
        } else if ("topic".equals(kind)) {
          all.add(
              new TriggerDef(
                  app, name, workflow, entry, null, null, null, t.path("topic").asText(), t));
        } else {
          problems.add(name + ": unknown kind '" + kind + "'");
        }
      } catch (IllegalArgumentException e) {
        problems.add(name + ": " + e.getMessage());
      }
    }
    return all;
  }
}
