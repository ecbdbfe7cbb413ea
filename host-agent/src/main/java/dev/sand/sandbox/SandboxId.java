package dev.sand.sandbox;

/**
 * The backend's id of a sandbox (a Docker container id, or a process-group id).
 *
 * @param value non-blank
 */
public record SandboxId(String value) {
  public SandboxId {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException("sandbox id must be non-blank, got '" + value + "'");
    }
  }

  @Override
  public String toString() {
    // Docker's 64-hex ids read best in their short form, as `docker ps` shows them
    return value.length() == 64 && value.chars().allMatch(c -> Character.digit(c, 16) >= 0)
        ? value.substring(0, 12)
        : value;
  }
}
