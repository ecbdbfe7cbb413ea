package dev.sand.agent;

import dev.sand.agent.refusal.Refusal;
import java.util.List;

/** A read of execution records was refused ({@link ExecutionsHandler}). */
final class ExecutionRefused extends Refusal {
  private static final long serialVersionUID = 1L;

  ExecutionRefused(Reason reason, String problem) {
    super(reason, List.of(problem));
  }
}
