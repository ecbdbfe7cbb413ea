package dev.sand.agent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.agent.apps.DeployException;
import dev.sand.agent.refusal.Refusal.Reason;
import org.junit.jupiter.api.Test;

class RefusalsTest {
  /** Each kind of refusal answers its HTTP status, whatever its domain; the mapping is one. */
  @Test
  void status_mapsEveryReasonToItsHttpStatus() {
    assertThat(Refusals.status(Reason.INVALID)).isEqualTo(400);
    assertThat(Refusals.status(Reason.NOT_FOUND)).isEqualTo(404);
    assertThat(Refusals.status(Reason.CONFLICT)).isEqualTo(409);
    assertThat(Refusals.status(Reason.FORBIDDEN)).isEqualTo(403);
    assertThat(Refusals.status(Reason.TOO_LARGE)).isEqualTo(413);
    assertThat(Refusals.status(Reason.UNAVAILABLE)).isEqualTo(503);
    assertThat(Refusals.status(Reason.INTERNAL)).isEqualTo(500);
  }

  /** Apps, users and tokens, executions: each domain its own type, one set of reasons. */
  @Test
  void eachDomain_hasItsOwnType_withTheSharedReasons() {
    var deploy = new DeployException(Reason.CONFLICT, "taken");
    var access = new AccessRefused(Reason.NOT_FOUND, "no user 'ada'");
    var execution = new ExecutionRefused(Reason.NOT_FOUND, "no execution 'x'");
    assertThat(deploy.reason()).isEqualTo(Reason.CONFLICT);
    assertThat(access.getMessage()).isEqualTo("no user 'ada'");
    assertThat(execution.problems()).containsExactly("no execution 'x'");
  }
}
