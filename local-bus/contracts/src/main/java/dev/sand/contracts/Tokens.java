package dev.sand.contracts;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Bearer tokens (decision 0017): {@code sand_} and 256 random bits in base64url. Only their SHA-256
 * is ever stored; a token has enough entropy that a plain hash cannot be reversed by search, so no
 * slow password hash is needed, and the lookup stays one hash per request.
 */
public final class Tokens {
  private static final Pattern FORMAT =
      Pattern.compile(Pattern.quote(contractsConstants.TOKEN_PREFIX) + "[A-Za-z0-9_-]{43}");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final HexFormat HEX = HexFormat.of();

  private Tokens() {}

  /** A new random token. */
  public static String generate() {
    byte[] bits = new byte[32];
    RANDOM.nextBytes(bits);
    return contractsConstants.TOKEN_PREFIX
        + Base64.getUrlEncoder().withoutPadding().encodeToString(bits);
  }

  /** A new token id: {@code tok_} and 12 hex digits, public (listed, used to revoke). */
  public static String newId() {
    byte[] bits = new byte[6];
    RANDOM.nextBytes(bits);
    return "tok_" + HEX.formatHex(bits);
  }

  /** Whether {@code token} has the shape of a token (says nothing of whether it is valid). */
  public static boolean wellFormed(String token) {
    return token != null && FORMAT.matcher(token).matches();
  }

  /** The lowercase hex SHA-256 of {@code token}: what is stored and looked up. */
  public static String hash(String token) {
    try {
      return HEX.formatHex(
          MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime has SHA-256", e);
    }
  }

  /** Whether {@code hash} has the shape {@link #hash} gives. */
  public static boolean wellFormedHash(String hash) {
    return hash != null && hash.length() == 64 && hash.chars().allMatch(Tokens::lowerHex);
  }

  /** Compares two secrets in time independent of where they differ. */
  public static boolean sameSecret(String expected, String given) {
    if (expected == null || expected.isEmpty() || given == null) {
      return false;
    }
    return MessageDigest.isEqual(
        expected.getBytes(StandardCharsets.UTF_8), given.getBytes(StandardCharsets.UTF_8));
  }

  private static boolean lowerHex(int c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }
}
