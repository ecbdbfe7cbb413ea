package dev.sand.agent.apps;

import dev.sand.agent.refusal.Refusal;
import java.util.List;

/** A deploy, or another call about applications (their files, owners, topics), was refused. */
public final class DeployException extends Refusal {
  private static final long serialVersionUID = 1L;

  public DeployException(Reason reason, List<String> problems) {
    super(reason, problems);
  }

  public DeployException(Reason reason, String problem) {
    this(reason, List.of(problem));
  }
}
