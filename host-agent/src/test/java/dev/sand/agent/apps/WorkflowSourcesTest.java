package dev.sand.agent.apps;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

class WorkflowSourcesTest {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private static ObjectNode sources() throws Exception {
    return (ObjectNode)
        MAPPER.readTree(
            """
            {"main": {"file": "workflows/main.json", "kind": "asl",
                      "definition": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}},
                      "source": "{\\"StartAt\\": \\"A\\"}"}}
            """);
  }

  @Test
  void find_knownWorkflow_answersItWithAppAndName() throws Exception {
    WorkflowSources kept = new WorkflowSources();
    kept.put("orders", sources());

    ObjectNode found = kept.find("orders", "main").orElseThrow();

    assertThat(found.path("app").asText()).isEqualTo("orders");
    assertThat(found.path("workflow").asText()).isEqualTo("main");
    assertThat(found.path("kind").asText()).isEqualTo("asl");
    assertThat(found.path("file").asText()).isEqualTo("workflows/main.json");
    assertThat(found.path("definition").path("StartAt").asText()).isEqualTo("A");
    assertThat(found.path("source").asText()).isEqualTo("{\"StartAt\": \"A\"}");
  }

  @Test
  void find_unknownAppOrWorkflow_orRemoved_isEmpty() throws Exception {
    WorkflowSources kept = new WorkflowSources();
    kept.put("orders", sources());

    assertThat(kept.find("orders", "other")).isEmpty();
    assertThat(kept.find("hello", "main")).isEmpty();
    kept.remove("orders");
    assertThat(kept.find("orders", "main")).isEmpty();
  }

  /** What was kept does not change when the caller changes its copy later. */
  @Test
  void put_keepsACopy() throws Exception {
    WorkflowSources kept = new WorkflowSources();
    ObjectNode given = sources();
    kept.put("orders", given);

    given.remove("main");

    assertThat(kept.find("orders", "main")).isPresent();
  }
}
