package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class FrontendMetricsTest {
  private static String text(FrontendMetrics metrics) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrometheusTextFormatWriter.create().write(out, metrics.registry.scrape());
    return out.toString(StandardCharsets.UTF_8);
  }

  /** Accepted invocations are counted and timed by app and mode; refusals by status. */
  @Test
  void invoked_countsByStatus() throws IOException {
    FrontendMetrics metrics = new FrontendMetrics();
    metrics.invoked("shop", "sync", 200, 2_000_000);
    metrics.invoked("shop", "sync", 200, 4_000_000);
    metrics.invoked("shop", "async", 202, 1_000_000);
    metrics.invoked("shop", "sync", 400, 1_000);
    metrics.invoked("no-such-app", "sync", 404, 1_000);
    String text = text(metrics);
    assertThat(text)
        .contains("sand_invocations_total{app=\"shop\",mode=\"sync\"} 2")
        .contains("sand_invocations_total{app=\"shop\",mode=\"async\"} 1")
        .contains("sand_invocation_duration_seconds_count{app=\"shop\",mode=\"sync\"} 2")
        .contains("sand_invocation_duration_seconds_sum{app=\"shop\",mode=\"sync\"} 0.006")
        .contains("sand_invocations_refused_total{app=\"shop\",status=\"400\"} 1")
        // an unknown app's name never becomes a label
        .contains("sand_invocations_refused_total{app=\"\",status=\"404\"} 1")
        .doesNotContain("no-such-app");
  }

  /**
   * What counting costs on the invocation path: an accepted invocation's counter and histogram and
   * its response's counter. Prints the figure (decision 0019); asserts the counts.
   */
  @Test
  void invoked_costPerInvocation() throws IOException {
    FrontendMetrics metrics = new FrontendMetrics();
    int warmup = 200_000;
    int n = 1_000_000;
    for (int i = 0; i < warmup; i++) {
      metrics.invoked("shop", "sync", 200, i);
      metrics.responded(200);
    }
    long start = System.nanoTime();
    for (int i = 0; i < n; i++) {
      metrics.invoked("shop", "sync", 200, i);
      metrics.responded(200);
    }
    double perCall = (System.nanoTime() - start) / (double) n;
    System.out.printf("metrics cost per invocation: %.0f ns%n", perCall);
    assertThat(text(metrics))
        .contains("sand_invocations_total{app=\"shop\",mode=\"sync\"} " + (warmup + n));
  }
}
