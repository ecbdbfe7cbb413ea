package dev.sand.agent.refusal;

import java.util.List;

/**
 * A call to the host agent was refused. Each domain has its own type ({@code DeployException} for
 * applications, {@code AccessRefused} for users and tokens, {@code ExecutionRefused} for execution
 * records); {@link #reason} says what kind of refusal it is, and the agent's HTTP layer maps it to
 * a status in one place ({@code Refusals}); {@link #problems} each name the file, field or value
 * and the rule broken.
 */
public abstract class Refusal extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why a call was refused. */
  public enum Reason {
    /** The request or the application is wrong: the caller must change it. */
    INVALID,
    /** The request names nothing that exists (or nothing the caller may see). */
    NOT_FOUND,
    /** The request conflicts with what exists (an application name another user holds). */
    CONFLICT,
    /** The caller's role does not allow the request. */
    FORBIDDEN,
    /** The upload is over a size limit. */
    TOO_LARGE,
    /** A dependency of this host (Redis, Docker, Cassandra, a sandbox backend) is away now. */
    UNAVAILABLE,
    /**
     * This host failed to carry out a valid request (a tool would not run, workers did not start).
     */
    INTERNAL
  }

  private final Reason reason;
  private final List<String> problems;

  protected Refusal(Reason reason, List<String> problems) {
    super(String.join("; ", problems));
    this.reason = reason;
    this.problems = List.copyOf(problems);
  }

  /** What kind of refusal this is. */
  public final Reason reason() {
    return reason;
  }

  /** Every problem found, in order. */
  public final List<String> problems() {
    return problems;
  }
}
