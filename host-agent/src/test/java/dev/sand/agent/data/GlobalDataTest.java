package dev.sand.agent.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sand.contracts.DataOp;
import dev.sand.contracts.DataReply;
import dev.sand.contracts.DataRequest;
import dev.sand.store.DataEntry;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

class GlobalDataTest {
  private static final GlobalData NOT_CONNECTED = new GlobalData(() -> null);

  private static DataRequest request(DataOp op, String key) {
    return new DataRequest("r1", op, key, Long.MAX_VALUE);
  }

  private static DataReply serve(DataRequest request) {
    return NOT_CONNECTED.serve("thumbs", request).toCompletableFuture().join();
  }

  /** A value over the limit is refused with the sizes named, before Cassandra is asked. */
  @Test
  void serve_valueOverLimit_refusedNamingTheLimit() {
    DataRequest put = request(DataOp.PUT, "big").setValue(new byte[GlobalData.MAX_VALUE_BYTES + 1]);
    DataReply reply = serve(put);
    assertThat(reply.isOk()).isFalse();
    assertThat(reply.getError())
        .contains(String.valueOf(GlobalData.MAX_VALUE_BYTES + 1))
        .contains("limit of " + GlobalData.MAX_VALUE_BYTES);
  }

  /** Malformed requests are refused with a reason each; a prefix may be empty, a key not. */
  @Test
  void refusal_namesWhatIsWrong() {
    assertThat(GlobalData.refusal(new DataRequest().setRequest_id("r")))
        .hasValueSatisfying(why -> assertThat(why).contains("no operation"));
    assertThat(GlobalData.refusal(request(DataOp.GET, "")))
        .hasValueSatisfying(why -> assertThat(why).contains("key is empty"));
    assertThat(GlobalData.refusal(request(DataOp.DELETE, "k".repeat(1025))))
        .hasValueSatisfying(why -> assertThat(why).contains("1025 bytes"));
    assertThat(GlobalData.refusal(request(DataOp.PUT, "k")))
        .hasValueSatisfying(why -> assertThat(why).contains("without a value"));
    assertThat(GlobalData.refusal(request(DataOp.KEYS, ""))).isEmpty();
    assertThat(GlobalData.refusal(request(DataOp.PUT, "k").setValue(new byte[10]))).isEmpty();
  }

  /** Without Cassandra a valid request gets an error reply, not an exception. */
  @Test
  void serve_cassandraNotConnected_errorReply() {
    DataReply reply = serve(request(DataOp.GET, "k"));
    assertThat(reply.isOk()).isFalse();
    assertThat(reply.getError()).contains("cassandra is not connected");
  }

  /** Nothing written matches trivially; anything else needs Cassandra, and fails without. */
  @Test
  void matches_emptyIsTrue_otherwiseNeedsCassandra() {
    assertThat(NOT_CONNECTED.matches("thumbs", List.of()).toCompletableFuture().join()).isTrue();
    assertThatThrownBy(
            () ->
                NOT_CONNECTED
                    .matches("thumbs", List.of(DataEntry.deleted("k")))
                    .toCompletableFuture()
                    .join())
        .hasMessageContaining("not connected");
  }

  /**
   * An entry holds when Cassandra has the same size and hash (a put) or nothing (a delete);
   * anything else, including a missing key for a put, does not.
   */
  @Test
  void holds_comparesSizeAndHash_deletedMeansAbsent() {
    byte[] hash = dev.sand.store.cassandra.DataTable.sha256(new byte[] {1, 2});
    byte[] other = dev.sand.store.cassandra.DataTable.sha256(new byte[] {3});
    java.util.Map<String, DataEntry> stored = java.util.Map.of("a", new DataEntry("a", 2, hash));
    assertThat(GlobalData.holds(stored, new DataEntry("a", 2, hash))).isTrue();
    assertThat(GlobalData.holds(stored, new DataEntry("a", 3, hash))).isFalse();
    assertThat(GlobalData.holds(stored, new DataEntry("a", 2, other))).isFalse();
    assertThat(GlobalData.holds(stored, new DataEntry("b", 2, hash))).isFalse();
    assertThat(GlobalData.holds(stored, DataEntry.deleted("b"))).isTrue();
    assertThat(GlobalData.holds(stored, DataEntry.deleted("a"))).isFalse();
  }

  /** The flag header's puts and deletes parse into entries; a malformed one is named. */
  @Test
  void dataHeader_parsesPutsAndDeletes_refusesGarbage() {
    String hash = "ab".repeat(32);
    List<DataEntry> entries =
        DataHeader.parse(
            "[{\"key\":\"a\",\"size\":6,\"sha256\":\""
                + hash
                + "\"},{\"key\":\"b\",\"deleted\":true}]");
    assertThat(entries)
        .containsExactly(
            new DataEntry("a", 6, HexFormat.of().parseHex(hash)), DataEntry.deleted("b"));
    assertThatThrownBy(() -> DataHeader.parse("{}")).hasMessageContaining("JSON list");
    assertThatThrownBy(() -> DataHeader.parse("[{\"key\":\"a\",\"size\":1,\"sha256\":\"zz\"}]"))
        .hasMessageContaining("entry 'a'");
    assertThatThrownBy(() -> DataHeader.parse("[{\"size\":1}]"))
        .hasMessageContaining("without a string key");
  }

  /** A request whose deadline passed while it queued is dropped; garbage is dropped too. */
  @Test
  void onRequest_pastDeadlineOrMalformed_droppedUnanswered() {
    Clock clock = Clock.fixed(Instant.ofEpochMilli(10_000), ZoneOffset.UTC);
    DataRequests requests =
        new DataRequests(() -> null, () -> java.util.Set.of(), NOT_CONNECTED, clock);
    requests.onRequest(
        "thumbs", DataCodec.encodeRequest(new DataRequest("r1", DataOp.GET, "k", 9_999)));
    requests.onRequest("thumbs", new byte[] {1, 2, 3});
    requests.onRequest(
        "thumbs", DataCodec.encodeRequest(new DataRequest("bad:id", DataOp.GET, "k", 20_000)));
    assertThat(requests.counters()).containsEntry("gdata_dropped", 3L);
    requests.close();
  }

  /** The codec reads what it writes, and refuses a request over its size bound. */
  @Test
  void codec_roundTrips_andBoundsRequests() {
    DataRequest request = new DataRequest("r1", DataOp.PUT, "k", 5).setValue(new byte[] {7});
    assertThat(DataCodec.decodeRequest(DataCodec.encodeRequest(request))).isEqualTo(request);
    DataReply reply = new DataReply(true).setKeys(List.of("a", "b"));
    assertThat(DataCodec.decodeReply(DataCodec.encodeReply(reply))).isEqualTo(reply);
    assertThatThrownBy(() -> DataCodec.decodeRequest(new byte[DataCodec.MAX_REQUEST_BYTES + 1]))
        .hasMessageContaining("exceeds");
  }
}
