package dev.sand.agent.apps;

import java.util.List;

/**
 * A deploy (or another management call) was refused. {@link #reason} says what kind of refusal it
 * is, for the caller to branch on (the HTTP handler maps it to a status code); {@link #problems}
 * each name the file, field or value and the rule broken.
 */
public final class DeployException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why a management call was refused. */
  public enum Reason {
    /** The request or the application is wrong: the caller must change it. */
    INVALID,
    /** The request names no deployed application (or one the caller may not see). */
    NOT_FOUND,
    /** The request conflicts with what exists (an application name another user holds). */
    CONFLICT,
    /** The caller's role does not allow the request. */
    FORBIDDEN,
    /** The upload is over a size limit. */
    TOO_LARGE,
    /** A dependency of this host (Redis, Docker, a sandbox backend) is not available now. */
    UNAVAILABLE,
    /**
     * This host failed to carry out a valid request (a tool would not run, workers did not start).
     */
    INTERNAL
  }

  private final Reason reason;
  private final List<String> problems;

  public DeployException(Reason reason, List<String> problems) {
    super(String.join("; ", problems));
    this.reason = reason;
    this.problems = List.copyOf(problems);
  }

  public DeployException(Reason reason, String problem) {
    this(reason, List.of(problem));
  }

  /** What kind of refusal this is. */
  public Reason reason() {
    return reason;
  }

  /** Every problem found, in order. */
  public List<String> problems() {
    return problems;
  }
}
