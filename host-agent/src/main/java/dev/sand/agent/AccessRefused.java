package dev.sand.agent;

import dev.sand.agent.refusal.Refusal;
import java.util.List;

/** A call about users or tokens was refused ({@link AccessHandler}). */
final class AccessRefused extends Refusal {
  private static final long serialVersionUID = 1L;

  AccessRefused(Reason reason, String problem) {
    super(reason, List.of(problem));
  }
}
