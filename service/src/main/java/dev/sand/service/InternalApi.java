package dev.sand.service;

/**
 * The routes SAND's services call on each other, declared once: the host agent's and the frontend's
 * route tables serve them, their callers build URLs from them. Every one is behind the agents'
 * secret (decision 0017); none is in {@code frontend/openapi.yaml}, which describes what users may
 * call.
 */
public final class InternalApi {
  /** Host agent, {@code GET}: who holds a token (its hash in {@code X-Sand-Token-Hash}). */
  public static final String PRINCIPAL = "/internal/principal";

  /** Host agent, {@code GET}: its sandboxes with their grain workers, for the cluster view. */
  public static final String SANDBOXES = "/internal/sandboxes";

  /** Host agent, {@code POST} and {@code GET}: the names of idempotent starts. */
  public static final String EXECUTION_NAMES = "/internal/executions/names";

  /** Frontend, {@code POST}: users or tokens changed; drop the token cache. */
  public static final String AUTH_FLUSH = "/internal/auth/flush";

  private InternalApi() {}
}
