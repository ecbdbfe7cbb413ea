package dev.sand.agent.triggers;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An app's triggers as parsed from its metadata (problems logged once, when it was read).
 *
 * @param metadata the document they were read from (compared by identity)
 */
record ParsedTriggers(
    JsonNode metadata, List<TriggerDef> defs, long deployedAtMs, int payloadLimitBytes) {
  // the triggers' name: the log lines they wrote before this record existed keep their logger
  private static final Logger LOG = LoggerFactory.getLogger(Triggers.class);

  /** Reads the triggers of {@code app}, logging each problem; never throws. */
  static ParsedTriggers of(JsonNode app) {
    List<String> problems = new ArrayList<>();
    List<TriggerDef> defs = TriggerDef.of(app, problems);
    String name = app.path("name").asText();
    problems.forEach(p -> LOG.atWarn().addKeyValue("app", name).log("trigger ignored: " + p));
    return new ParsedTriggers(
        app,
        List.copyOf(defs),
        millis(app.path("deployed_at").asText(null)),
        app.path("limits").path("payload_kb").asInt(256) * 1024);
  }

  /** Milliseconds since the epoch of an ISO-8601 instant; 0 for none or one that does not parse. */
  private static long millis(String iso) {
    try {
      return iso == null ? 0 : Instant.parse(iso).toEpochMilli();
    } catch (DateTimeParseException e) {
      return 0;
    }
  }
}
