package dev.sand.contracts;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Task tokens (callbacks, decision 0033): {@code b64url(app \n execution \n wait) "."
 * b64url(HMAC-SHA256(k_app, those bytes))}, unpadded, where {@code k_app = HMAC-SHA256(
 * host_agent.secret, TASK_TOKEN_KEY_LABEL + app)}.
 *
 * <p>Why here, in contracts: the grain worker mints (Python, with {@code k_app} from {@code
 * SAND_TASK_TOKEN_KEY}), the host agent verifies and hands {@code k_app} to sandboxes, and the
 * frontend checks a token's shape before forwarding it; this is the one module all Java sides
 * share, and it already holds the other names both languages must build alike. A per-app key means
 * an application's sandbox can mint tokens for itself only, and the agents' secret never enters a
 * sandbox.
 *
 * <p>Pure and thread-safe. Every refusal is an {@link IllegalArgumentException} whose message says
 * what is wrong, never the expected MAC.
 */
public final class TaskTokens {
  /** The longest token accepted (characters); a real one is a few hundred. */
  public static final int MAX_LENGTH = 2048;

  private static final String HMAC = "HmacSHA256";
  private static final int MAC_BYTES = 32;
  private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();
  private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

  private TaskTokens() {}

  /**
   * The task-token key of {@code app}: {@code HMAC-SHA256(UTF-8(secret), UTF-8(TASK_TOKEN_KEY_LABEL
   * + app))}.
   *
   * @throws IllegalArgumentException when {@code secret} is empty (the agents then have no secret:
   *     callbacks cannot be signed)
   */
  public static byte[] appKey(String secret, String app) {
    if (secret == null || secret.isEmpty()) {
      throw new IllegalArgumentException(
          "task tokens need host_agent.secret, and the config sets none");
    }
    return hmac(
        secret.getBytes(StandardCharsets.UTF_8),
        (contractsConstants.TASK_TOKEN_KEY_LABEL + app).getBytes(StandardCharsets.UTF_8));
  }

  /** A token for {@code claims} signed with {@code appKey} (what the worker does; tests). */
  public static String mint(byte[] appKey, TaskToken claims) {
    byte[] payload = payload(claims);
    return ENCODER.encodeToString(payload) + "." + ENCODER.encodeToString(hmac(appKey, payload));
  }

  /**
   * What {@code token} claims, from its shape alone: the MAC is not checked. For routing and early
   * refusals only; trust only {@link #verify}.
   *
   * @throws IllegalArgumentException when it is over {@link #MAX_LENGTH}, lacks the {@code .}, is
   *     not canonical unpadded base64url, or its payload is not three valid fields
   */
  public static TaskToken parse(String token) {
    return split(token).claims();
  }

  /**
   * What {@code token} claims, once its MAC was recomputed with the key of the app it names under
   * {@code secret} and compared in constant time.
   *
   * @throws IllegalArgumentException when it is malformed (see {@link #parse}) or not signed with
   *     that app's key
   */
  public static TaskToken verify(String token, String secret) {
    Parts parts = split(token);
    byte[] expected = hmac(appKey(secret, parts.claims().app()), parts.payload());
    if (!MessageDigest.isEqual(expected, parts.mac())) {
      throw new IllegalArgumentException("task token is not valid (its signature does not match)");
    }
    return parts.claims();
  }

  /** The row key of {@code token}: the lowercase hex SHA-256 of its text. */
  public static String hash(String token) {
    return Tokens.hash(token);
  }

  private record Parts(byte[] payload, byte[] mac, TaskToken claims) {}

  private static Parts split(String token) {
    if (token == null || token.isEmpty()) {
      throw new IllegalArgumentException("task token is missing");
    }
    if (token.length() > MAX_LENGTH) {
      throw new IllegalArgumentException(
          "task token is over " + MAX_LENGTH + " characters (" + token.length() + ")");
    }
    int dot = token.lastIndexOf('.');
    if (dot < 0) {
      throw new IllegalArgumentException("task token must be <payload>.<signature>");
    }
    byte[] payload = decode(token.substring(0, dot), "payload");
    byte[] mac = decode(token.substring(dot + 1), "signature");
    if (mac.length != MAC_BYTES) {
      throw new IllegalArgumentException(
          "task token signature must be " + MAC_BYTES + " bytes, got " + mac.length);
    }
    String[] fields = new String(payload, StandardCharsets.UTF_8).split("\n", -1);
    if (fields.length != 3) {
      throw new IllegalArgumentException(
          "task token payload must be 3 lines (app, execution, wait id), got " + fields.length);
    }
    return new Parts(payload, mac, new TaskToken(fields[0], fields[1], fields[2]));
  }

  /**
   * Decodes unpadded base64url, refusing any other spelling of the same bytes: two texts of one
   * token would be two rows of one wait.
   */
  private static byte[] decode(String part, String what) {
    byte[] bytes;
    try {
      bytes = DECODER.decode(part);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("task token " + what + " is not base64url", e);
    }
    if (part.isEmpty() || !ENCODER.encodeToString(bytes).equals(part)) {
      throw new IllegalArgumentException("task token " + what + " is not unpadded base64url");
    }
    return bytes;
  }

  private static byte[] payload(TaskToken claims) {
    return (claims.app() + "\n" + claims.executionId() + "\n" + claims.waitId())
        .getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] hmac(byte[] key, byte[] message) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(key, HMAC));
      return mac.doFinal(message);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("every Java runtime has " + HMAC, e);
    }
  }
}
