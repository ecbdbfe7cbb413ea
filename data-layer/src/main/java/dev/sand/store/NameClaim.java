package dev.sand.store;

/**
 * The outcome of claiming an execution name of an application (table {@code execution_names}).
 *
 * @param executionId the execution the name belongs to: the claimant's when {@code claimed}, else
 *     the earlier one's
 * @param inputSha256 the SHA-256 (hex) of that execution's input
 * @param claimed whether this claim took the name (first start with it)
 */
public record NameClaim(String executionId, String inputSha256, boolean claimed) {
  /** Whether a start with {@code sha256} as its input's hash starts the same execution. */
  public boolean sameInput(String sha256) {
    return inputSha256 != null && inputSha256.equals(sha256);
  }
}
