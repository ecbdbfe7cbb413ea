package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.sand.config.SandboxConfig;
import org.junit.jupiter.api.Test;

/** An app's CPU weight and memory, within the operator's defaults and maxima (decision 0022). */
class AppLimitsTest {
  private static final SandboxConfig.Limits OPERATOR =
      new SandboxConfig.Limits(100, 200, 512, 1024, 4096);
  private static final ObjectMapper JSON = new ObjectMapper();

  private static ObjectNode description(String limits) throws Exception {
    return (ObjectNode) JSON.readTree("{\"grains\": [\"g\"], \"limits\": " + limits + "}");
  }

  /** Unset (null, as the validator describes them) limits are the operator's defaults. */
  @Test
  void of_unset_takesTheOperatorsDefaults() throws Exception {
    ObjectNode app = description("{\"memory_mb\": null, \"cpu_weight\": null}");

    assertThat(AppLimits.of(app.path("limits"), OPERATOR)).isEqualTo(new AppLimits(100, 512));
  }

  /** Values at the maxima are the app's; the metadata gets the effective ones. */
  @Test
  void of_atTheMaxima_areKeptAndWrittenToTheMetadata() throws Exception {
    ObjectNode app = description("{\"memory_mb\": 1024, \"cpu_weight\": 200, \"timeout_s\": 5}");

    AppLimits limits = AppLimits.of(app.path("limits"), OPERATOR);
    limits.writeTo(app);

    assertThat(limits).isEqualTo(new AppLimits(200, 1024));
    assertThat(app.path("limits").path("cpu_weight").asInt()).isEqualTo(200);
    assertThat(app.path("limits").path("timeout_s").asInt()).isEqualTo(5);
  }

  /** Above a maximum the deploy is refused, naming each field, its value and the limit. */
  @Test
  void of_aboveTheMaxima_isRefusedNamingFieldValueAndLimit() throws Exception {
    ObjectNode app = description("{\"memory_mb\": 2048, \"cpu_weight\": 500}");

    assertThatThrownBy(() -> AppLimits.of(app.path("limits"), OPERATOR))
        .isInstanceOfSatisfying(
            DeployException.class,
            e -> {
              assertThat(e.reason()).isEqualTo(DeployException.Reason.INVALID);
              assertThat(e.problems())
                  .containsExactly(
                      "app.yaml: limits.cpu_weight is 500, above this cluster's maximum of 200"
                          + " (sandbox.max_cpu_weight in the cluster config)",
                      "app.yaml: limits.memory_mb is 2048, above this cluster's maximum of 1024"
                          + " (sandbox.max_memory_mb in the cluster config)");
            });
  }

  /** A sandbox gets one instance's memory per grain plus one, up to the cap. */
  @Test
  void sandboxMemoryMb_isOneSharePerGrainPlusOneCapped() {
    AppLimits limits = new AppLimits(100, 1024);

    assertThat(limits.sandboxMemoryMb(2, 4096)).isEqualTo(3072);
    assertThat(limits.sandboxMemoryMb(5, 4096)).isEqualTo(4096);
  }
}
