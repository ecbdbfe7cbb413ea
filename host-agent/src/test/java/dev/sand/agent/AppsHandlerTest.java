package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.agent.apps.DeployException.Reason;
import org.junit.jupiter.api.Test;

class AppsHandlerTest {
  /** Each kind of refusal answers its HTTP status; the mapping lives in the handler only. */
  @Test
  void status_mapsEveryReasonToItsHttpStatus() {
    assertThat(AppsHandler.status(Reason.INVALID)).isEqualTo(400);
    assertThat(AppsHandler.status(Reason.NOT_FOUND)).isEqualTo(404);
    assertThat(AppsHandler.status(Reason.TOO_LARGE)).isEqualTo(413);
    assertThat(AppsHandler.status(Reason.UNAVAILABLE)).isEqualTo(503);
    assertThat(AppsHandler.status(Reason.INTERNAL)).isEqualTo(500);
  }
}
