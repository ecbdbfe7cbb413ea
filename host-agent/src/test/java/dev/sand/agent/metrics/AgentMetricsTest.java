package dev.sand.agent.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.bus.thrift.EventKind;
import dev.sand.bus.thrift.EventMessage;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AgentMetricsTest {
  private static AgentMetrics metrics(Map<String, Long> counters) {
    return new AgentMetrics(
        "host-1",
        () -> counters,
        () -> Map.of("shop", List.of("resize")),
        () -> null, // Redis not connected: those sources are left out
        () -> null);
  }

  private static String text(AgentMetrics metrics) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, metrics.registry().scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  private static EventMessage ended(EventKind kind, String app, String error) {
    return new EventMessage().setKind(kind).setApp(app).setError(error);
  }

  /** The agent's own counters become metrics; recovery counters share one family by kind. */
  @Test
  void collect_agentCounters_becomeMetrics() throws IOException {
    String text =
        text(
            metrics(
                Map.of(
                    "backed_up", 12L,
                    "backups_acknowledged", 11L,
                    "replayed", 2L,
                    "watchdog_restarts", 1L,
                    "recorded", 5L,
                    "not_a_known_counter", 9L)));
    assertThat(text)
        .contains("sand_agent_backups_published_total 12.0")
        .contains("sand_agent_backups_acknowledged_total 11.0")
        .contains("sand_agent_recovery_events_total{kind=\"sandbox_replay\"} 2.0")
        .contains("sand_agent_recovery_events_total{kind=\"watchdog_restart\"} 1.0")
        .contains("sand_agent_records_recorded_total 5.0")
        .contains("sand_agent_sandboxes{app=\"shop\"} 1.0")
        .doesNotContain("not_a_known_counter");
  }

  /**
   * Ended executions are labelled by app, status and error, but an app not deployed here and an
   * error type that is not a plain name (tenant input) never become labels.
   */
  @Test
  void executionEnded_labelsAreBounded() throws IOException {
    AgentMetrics metrics = metrics(Map.of());
    metrics.executionEnded(ended(EventKind.RESULT, "shop", ""));
    metrics.executionEnded(ended(EventKind.ERROR, "shop", "KeyError"));
    metrics.executionEnded(ended(EventKind.ERROR, "shop", "evil\"}\nlabel"));
    metrics.executionEnded(ended(EventKind.ERROR, "forged-app", "KeyError"));
    metrics.executionEnded(ended(EventKind.TASK, "shop", "")); // not an end: ignored
    String text = text(metrics);
    assertThat(text)
        .contains("sand_executions_ended_total{app=\"shop\",error=\"\",status=\"SUCCEEDED\"} 1.0")
        .contains(
            "sand_executions_ended_total{app=\"shop\",error=\"KeyError\",status=\"FAILED\"} 1.0")
        .contains("sand_executions_ended_total{app=\"shop\",error=\"Other\",status=\"FAILED\"} 1.0")
        .contains("sand_executions_ended_total{app=\"\",error=\"KeyError\",status=\"FAILED\"} 1.0")
        .doesNotContain("forged-app")
        .doesNotContain("evil");
  }

  /** Past the cap of label sets, new error types are counted under Other. */
  @Test
  void executionEnded_manyErrorTypes_cappedUnderOther() throws IOException {
    AgentMetrics metrics = metrics(Map.of());
    for (int i = 0; i < AgentMetrics.MAX_ENDED_LABELS + 50; i++) {
      metrics.executionEnded(ended(EventKind.ERROR, "shop", "E" + i));
    }
    String text = text(metrics);
    assertThat(text)
        .contains("error=\"E0\"")
        .doesNotContain("error=\"E" + (AgentMetrics.MAX_ENDED_LABELS + 10) + "\"");
    assertThat(text)
        .contains("sand_executions_ended_total{app=\"\",error=\"Other\",status=\"FAILED\"} 50.0");
  }
}
