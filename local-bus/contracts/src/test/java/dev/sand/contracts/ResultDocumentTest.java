package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class ResultDocumentTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  static Stream<ResultDocument> documents() throws Exception {
    JsonNode output = MAPPER.readTree("{\"greeting\": \"Hi\", \"n\": [1, 2.5, null]}");
    JsonNode trace = MAPPER.readTree("[{\"grain\": \"greet\", \"ms\": 3}]");
    return Stream.of(
        ResultDocument.running("e1", "hello", "main", 1_700_000_000_000L),
        new ResultDocument(
            "e2",
            "hello",
            "main",
            ExecutionStatus.SUCCEEDED,
            0,
            1_700_000_000_001L,
            output,
            null,
            null,
            trace),
        ResultDocument.failed(
            "e3", "hello", "main", 1_700_000_000_002L, "States.Timeout", "grain 'greet' ran 30 s"));
  }

  /** What Java writes, Java reads back unchanged, for every status. */
  @ParameterizedTest
  @MethodSource("documents")
  void toBytes_parse_roundTrips(ResultDocument doc) {
    assertThat(ResultDocument.parse(doc.toBytes())).isEqualTo(doc);
  }

  /** The JSON keeps the keys Python and the HTTP API read, and leaves unset fields out. */
  @Test
  void toJson_writesTheContractKeysOnly() throws Exception {
    List<ResultDocument> docs = documents().toList();

    assertThat(docs.get(0).toJson().properties())
        .extracting(java.util.Map.Entry::getKey)
        .containsExactly("execution_id", "app", "workflow", "status", "started_ms");
    assertThat(docs.get(1).toJson().properties())
        .extracting(java.util.Map.Entry::getKey)
        .containsExactly(
            "execution_id", "app", "workflow", "status", "finished_ms", "output", "trace");
    assertThat(docs.get(2).toJson().properties())
        .extracting(java.util.Map.Entry::getKey)
        .containsExactly(
            "execution_id", "app", "workflow", "status", "finished_ms", "error", "cause");
    assertThat(docs.get(2).toJson().get("status").asText()).isEqualTo("FAILED");
  }

  /** A document written by hand (as Python does) reads into the same record. */
  @Test
  void parse_pythonDocument_readsEveryField() {
    String json =
        "{\"execution_id\": \"e4\", \"app\": \"a\", \"workflow\": \"w\", \"status\": \"FAILED\","
            + " \"finished_ms\": 5, \"error\": \"Boom\", \"cause\": \"bad\"}";

    ResultDocument doc = ResultDocument.parse(json.getBytes(StandardCharsets.UTF_8));

    assertThat(doc).isEqualTo(ResultDocument.failed("e4", "a", "w", 5, "Boom", "bad"));
    assertThat(doc.finished()).isTrue();
  }

  /** A status outside the contract is refused, naming the value. */
  @Test
  void parse_unknownStatus_isRefusedNamingIt() {
    byte[] json =
        "{\"execution_id\": \"e5\", \"status\": \"DONE\"}".getBytes(StandardCharsets.UTF_8);

    assertThatThrownBy(() -> ResultDocument.parse(json))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("got 'DONE'");
  }

  /** A FAILED document must name its error. */
  @Test
  void failed_withoutError_isRefused() {
    assertThatThrownBy(() -> ResultDocument.failed("e6", "a", "w", 1, "", "why"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("needs an error name");
  }
}
