package dev.sand.sandbox.docker;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DockerSandboxRuntimeTest {
  /** A sandbox's /tmp is size-limited, holds no setuid files or devices, and is writable by all. */
  @Test
  void tmpfsOptions_sizeLimitedNosuidNodevSticky() {
    assertThat(DockerSandboxRuntime.tmpfsOptions(64).split(","))
        .containsExactlyInAnyOrder("rw", "nosuid", "nodev", "mode=1777", "size=64m");
  }
}
