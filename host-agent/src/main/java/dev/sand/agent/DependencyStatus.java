package dev.sand.agent;

import java.util.Locale;

/** Where a dependency stands, as {@code /health} reports it. */
public enum DependencyStatus {
  /** Start-up: not reached yet; the agent keeps retrying with backoff. */
  CONNECTING(false),
  /** Opened and answering pings. */
  OK(true),
  /** Was up, stopped answering; the client reconnects on its own. */
  DOWN(false),
  /** Switched off in the config; the agent works without it. */
  DISABLED(true),
  /** Start-up gave up after the deadline; the agent exits. */
  FAILED(false);

  private final boolean healthy;

  DependencyStatus(boolean healthy) {
    this.healthy = healthy;
  }

  /** Whether the agent can serve with the dependency in this state. */
  public boolean healthy() {
    return healthy;
  }

  /** The word used in JSON and logs. */
  public String word() {
    return name().toLowerCase(Locale.ROOT);
  }
}
