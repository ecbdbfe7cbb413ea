package dev.sand.agent.apps;

import java.util.List;

/**
 * A deploy (or another management call) was refused. {@code status} is the HTTP status to answer
 * with; {@code problems} each name the file, field or value and the rule broken.
 */
public final class DeployException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final List<String> problems;

  public DeployException(int status, List<String> problems) {
    super(String.join("; ", problems));
    this.status = status;
    this.problems = List.copyOf(problems);
  }

  public DeployException(int status, String problem) {
    this(status, List.of(problem));
  }

  /** The HTTP status for the answer (400 invalid app, 404 unknown app, 503 backend down, ...). */
  public int status() {
    return status;
  }

  /** Every problem found, in order. */
  public List<String> problems() {
    return problems;
  }
}
