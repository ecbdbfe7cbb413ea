package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class TaskTokensTest {
  // The known-answer vector, computed with Python's hmac, hashlib and base64 (also in
  // /work/notes/token-vector.txt for the Python side's test): both languages mint the same bytes.
  private static final String SECRET = "s3cret-agent-0033";
  private static final TaskToken CLAIMS = new TaskToken("thumbs", "exec-1", "exec-1/Approve#3");
  private static final String K_APP_HEX =
      "190c0ce274d1b3da90ac23db1ccb2de8c0f92601b34f03005ecf95055ac0aef9";
  private static final String TOKEN =
      "dGh1bWJzCmV4ZWMtMQpleGVjLTEvQXBwcm92ZSMz.A7spnT2Q678gaqYCaYw0pumI7xx0f47_gWa7MEzG6ng";
  private static final String TOKEN_HASH =
      "915e4a1a41b4c5ce21c76f2e8e801a5b8e8ba86917a771b71e8f8aa547567cae";

  private static String b64(String text) {
    return Base64.getUrlEncoder()
        .withoutPadding()
        .encodeToString(text.getBytes(StandardCharsets.UTF_8));
  }

  /** Java derives the app key, mints and hashes exactly as the Python vector says. */
  @Test
  void mint_knownVector_matchesPython() {
    byte[] key = TaskTokens.appKey(SECRET, "thumbs");

    assertThat(HexFormat.of().formatHex(key)).isEqualTo(K_APP_HEX);
    assertThat(TaskTokens.mint(key, CLAIMS)).isEqualTo(TOKEN);
    assertThat(TaskTokens.hash(TOKEN)).isEqualTo(TOKEN_HASH);
  }

  /**
   * A minted token verifies under the secret it was derived from and names what it was made for.
   */
  @Test
  void verify_mintedToken_returnsItsClaims() {
    TaskToken claims = new TaskToken("shop", "exec-9", "exec-9/redrive-1/Fan#2/0/Approve#1");
    String token = TaskTokens.mint(TaskTokens.appKey(SECRET, "shop"), claims);

    assertThat(TaskTokens.verify(token, SECRET)).isEqualTo(claims);
    assertThat(TaskTokens.verify(TOKEN, SECRET)).isEqualTo(CLAIMS);
    assertThat(TaskTokens.parse(TOKEN)).isEqualTo(CLAIMS);
  }

  /** A payload changed after signing (another execution) is refused. */
  @Test
  void verify_tamperedPayload_isRefused() {
    String mac = TOKEN.substring(TOKEN.lastIndexOf('.') + 1);
    String forged = b64("thumbs\nexec-2\nexec-1/Approve#3") + "." + mac;

    assertThatThrownBy(() -> TaskTokens.verify(forged, SECRET))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("signature does not match");
  }

  /** A signature changed by one character is refused. */
  @Test
  void verify_tamperedMac_isRefused() {
    int dot = TOKEN.lastIndexOf('.');
    char first = TOKEN.charAt(dot + 1);
    String forged =
        TOKEN.substring(0, dot + 1) + (first == 'A' ? 'B' : 'A') + TOKEN.substring(dot + 2);

    assertThatThrownBy(() -> TaskTokens.verify(forged, SECRET))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("signature does not match");
  }

  /**
   * Another app's key (a sandbox minting for an app not its own) does not sign this app's token.
   */
  @Test
  void verify_signedWithAnotherAppsKey_isRefused() {
    String forged = TaskTokens.mint(TaskTokens.appKey(SECRET, "other"), CLAIMS);

    assertThatThrownBy(() -> TaskTokens.verify(forged, SECRET))
        .hasMessageContaining("signature does not match");
    assertThatThrownBy(() -> TaskTokens.verify(TOKEN, "another-secret"))
        .hasMessageContaining("signature does not match");
  }

  /** Tokens over 2048 characters are refused before any decoding. */
  @Test
  void parse_overLong_isRefused() {
    String token =
        TaskTokens.mint(
            TaskTokens.appKey(SECRET, "thumbs"),
            new TaskToken("thumbs", "exec-1", "w".repeat(TaskTokens.MAX_LENGTH)));

    assertThatThrownBy(() -> TaskTokens.verify(token, SECRET))
        .hasMessageContaining("over 2048 characters");
  }

  /** Every malformed part is refused with a message saying which. */
  @Test
  void parse_malformedParts_areRefused() {
    String mac = TOKEN.substring(TOKEN.lastIndexOf('.') + 1);
    assertThatThrownBy(() -> TaskTokens.parse("")).hasMessageContaining("missing");
    assertThatThrownBy(() -> TaskTokens.parse("no-dot-here")).hasMessageContaining("<payload>.");
    assertThatThrownBy(() -> TaskTokens.parse("!!!." + mac)).hasMessageContaining("base64url");
    // padded base64 spells the same bytes another way: refused
    assertThatThrownBy(() -> TaskTokens.parse(b64("a\nb\nc") + "=." + mac))
        .hasMessageContaining("base64url");
    assertThatThrownBy(() -> TaskTokens.parse(b64("thumbs\nexec-1") + "." + mac))
        .hasMessageContaining("3 lines");
    assertThatThrownBy(() -> TaskTokens.parse(b64("thumbs\nexec-1\nw\nx") + "." + mac))
        .hasMessageContaining("3 lines");
    assertThatThrownBy(() -> TaskTokens.parse(b64("thumbs\nexec-1\n") + "." + mac))
        .hasMessageContaining("wait id");
    assertThatThrownBy(() -> TaskTokens.parse(b64("Thumbs!\nexec-1\nw") + "." + mac))
        .hasMessageContaining("application");
    assertThatThrownBy(() -> TaskTokens.parse(b64("thumbs\nexec:1\nw") + "." + mac))
        .hasMessageContaining("execution");
    assertThatThrownBy(() -> TaskTokens.parse(b64("thumbs\nexec-1\nw") + "." + b64("short")))
        .hasMessageContaining("32 bytes");
  }

  /** Without host_agent.secret there is no app key: callbacks cannot be signed. */
  @Test
  void appKey_emptySecret_isRefused() {
    assertThatThrownBy(() -> TaskTokens.appKey("", "thumbs"))
        .hasMessageContaining("host_agent.secret");
  }

  /** The statuses are stored by the names contracts.thrift declares. */
  @Test
  void statuses_areTheThriftConstants() {
    assertThat(TaskWaitStatus.WAITING.name()).isEqualTo(contractsConstants.TASK_WAIT_WAITING);
    assertThat(TaskWaitStatus.SUCCEEDED.name()).isEqualTo(contractsConstants.TASK_WAIT_SUCCEEDED);
    assertThat(TaskWaitStatus.FAILED.name()).isEqualTo(contractsConstants.TASK_WAIT_FAILED);
    assertThat(TaskWaitStatus.TIMED_OUT.name()).isEqualTo(contractsConstants.TASK_WAIT_TIMED_OUT);
  }
}
