package dev.sand.frontend;

import dev.sand.contracts.contractsConstants;
import dev.sand.service.InternalApi;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every frontend of the cluster, as one of them tells the others that users or tokens changed
 * (decision 0017): {@code POST /internal/auth/flush} with the agents' secret to each, in parallel,
 * before the change is answered. Thread-safe.
 */
final class FrontendPeers {
  static final String FLUSH_PATH = InternalApi.AUTH_FLUSH;
  private static final Logger LOG = LoggerFactory.getLogger(FrontendPeers.class);
  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  private final List<Integer> ports;
  private final String secret;
  private final HttpClient client =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(TIMEOUT).build();

  /**
   * @param ports the other frontends' ports on loopback
   */
  FrontendPeers(List<Integer> ports, String secret) {
    this.ports = List.copyOf(ports);
    this.secret = secret;
  }

  /**
   * Asks every other frontend to drop its cached tokens and waits up to about 2 s; returns the
   * ports that did not confirm (down, or stuck: a frontend that is down has no cache to flush, and
   * one that missed this keeps a token for at most {@link Authenticator#KNOWN_TTL}).
   */
  List<Integer> flushAll() {
    List<CompletableFuture<Boolean>> answers = new ArrayList<>();
    for (int port : ports) {
      HttpRequest flush =
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + FLUSH_PATH))
              .timeout(TIMEOUT)
              .header(contractsConstants.HEADER_INTERNAL, secret)
              .POST(HttpRequest.BodyPublishers.noBody())
              .build();
      answers.add(
          client
              .sendAsync(flush, HttpResponse.BodyHandlers.discarding())
              .thenApply(r -> r.statusCode() == 200)
              .exceptionally(e -> false));
    }
    List<Integer> missed = new ArrayList<>();
    for (int i = 0; i < ports.size(); i++) {
      if (!answers.get(i).join()) {
        missed.add(ports.get(i));
      }
    }
    if (!missed.isEmpty()) {
      LOG.atWarn()
          .addKeyValue("frontends", missed)
          .log("users or tokens changed; these frontends did not confirm dropping their tokens");
    }
    return missed;
  }
}
