package dev.sand.agent;

import dev.sand.contracts.Caller;
import dev.sand.contracts.Tokens;
import dev.sand.contracts.contractsConstants;
import java.util.Optional;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.server.Request;

/**
 * Who an agent request is for (decision 0017). An agent answers only callers holding its secret
 * (the frontends and the cluster's own tools): anything else on the host or, on the process
 * backend, a tenant's grain, gets nothing. A frontend says on whose behalf it forwards (user, role,
 * token id); a request with the secret and no user is the system's own.
 */
final class InternalAuth {
  private static final String ATTRIBUTE = Caller.class.getName();

  private final String secret;

  InternalAuth(String secret) {
    this.secret = secret;
  }

  /**
   * The caller of {@code request}, remembered on it for {@link #callerOf}; empty when it lacks the
   * secret (or the agent has none).
   *
   * @throws IllegalArgumentException naming the header when the caller headers are malformed
   */
  Optional<Caller> authenticate(Request request) {
    HttpFields headers = request.getHeaders();
    if (!Tokens.sameSecret(secret, headers.get(contractsConstants.HEADER_INTERNAL))) {
      return Optional.empty();
    }
    String user = headers.get(contractsConstants.HEADER_USER);
    Caller caller =
        user == null
            ? Caller.SYSTEM
            : Caller.of(
                user,
                headers.get(contractsConstants.HEADER_ROLE),
                headers.get(contractsConstants.HEADER_TOKEN_ID));
    request.setAttribute(ATTRIBUTE, caller);
    return Optional.of(caller);
  }

  /** The caller {@link #authenticate} found for {@code request}. */
  static Caller callerOf(Request request) {
    Object caller = request.getAttribute(ATTRIBUTE);
    if (caller instanceof Caller known) {
      return known;
    }
    throw new IllegalStateException("request was not authenticated: " + request.getHttpURI());
  }
}
