package dev.sand.agent;

/**
 * One backend the host agent needs: the local bus (Redis), the global bus (Kafka), the global data
 * layer (Cassandra), the sandbox runtime (Docker). The agent opens each with retries at start-up,
 * then pings it periodically for {@code /health}.
 *
 * <p>Implementations are called from one monitor thread each, plus {@link #close} from the thread
 * that stops the agent.
 */
public interface Dependency extends AutoCloseable {
  /** Short lower-case name used in logs and health: {@code redis}, {@code kafka}, ... */
  String name();

  /** Whether the agent runs without this dependency (health reports it as disabled). */
  default boolean enabled() {
    return true;
  }

  /** Why the dependency is disabled; only called when {@link #enabled} is false. */
  default String disabledReason() {
    return "disabled";
  }

  /**
   * Connects and prepares the backend (creates topics or schema, removes orphans). Blocking.
   * Idempotent: after a failure the agent calls it again, and it continues from where it stopped.
   *
   * @return a short description of what was reached, for logs and health
   * @throws Exception when the backend is not reachable or refuses; the agent retries
   */
  String open() throws Exception;

  /**
   * Checks an opened backend. Blocking, bounded by the backend's own timeouts.
   *
   * @return a short description, for health
   * @throws Exception when the backend does not answer
   */
  String ping() throws Exception;

  /** Releases connections. Never throws. */
  @Override
  void close();
}
