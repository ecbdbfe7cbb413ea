package dev.sand.config;

import static dev.sand.config.ClusterDocuments.VALID;
import static dev.sand.config.ClusterDocuments.withHosts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Where the hosts are: the host list of cluster.json (or this host alone without one) and the
 * address a host agent binds.
 */
class ClusterConfigHostsTest {
  /** A file without a host list describes one host: itself, its agent on loopback. */
  @Test
  void parse_noHosts_derivesThisHost() {
    assertThat(ClusterConfig.parse(VALID).hosts())
        .containsExactly(
            new HostEntry(
                "host-1",
                Path.of("/abs/state/run/redis.sock"),
                URI.create("http://127.0.0.1:18090")));
  }

  /** The host list is read in order, each entry typed. */
  @Test
  void parse_hosts_readsEveryEntry() {
    String json =
        withHosts(
            """
            [{"id": "host-1", "redis_socket": "/s/hosts/host-1/run/redis/redis.sock",
              "agent_url": "http://10.213.7.11:18090"},
             {"id": "host-2", "redis_socket": "/s/hosts/host-2/run/redis/redis.sock",
              "agent_url": "http://10.213.7.12:18090"}]""");

    assertThat(ClusterConfig.parse(json).hosts())
        .containsExactly(
            new HostEntry(
                "host-1",
                Path.of("/s/hosts/host-1/run/redis/redis.sock"),
                URI.create("http://10.213.7.11:18090")),
            new HostEntry(
                "host-2",
                Path.of("/s/hosts/host-2/run/redis/redis.sock"),
                URI.create("http://10.213.7.12:18090")));
  }

  /** A bad entry is named by its index and key. */
  @Test
  void parse_badHostEntry_namesIndexAndKey() {
    String json =
        withHosts(
            """
            [{"id": "host-1", "redis_socket": "/r.sock", "agent_url": "http://10.0.0.1:1"},
             {"id": "host-2", "redis_socket": "relative.sock", "agent_url": "http://x:1"}]""");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts[1].redis_socket' must be an absolute path, got 'relative.sock'");
  }

  /** An agent URL without a port is refused. */
  @Test
  void parse_agentUrlWithoutPort_isRefused() {
    String json =
        withHosts(
            """
            [{"id": "host-1", "redis_socket": "/r.sock", "agent_url": "http://x"}]""");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts[0].agent_url' must be http://host:port, got 'http://x'");
  }

  /** Two hosts with one id would share keys and labels: refused. */
  @Test
  void parse_duplicateHostIds_areRefused() {
    String json =
        withHosts(
            """
            [{"id": "host-1", "redis_socket": "/a.sock", "agent_url": "http://10.0.0.1:1"},
             {"id": "host-1", "redis_socket": "/b.sock", "agent_url": "http://10.0.0.2:1"}]""");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts[1].id' must be unique, got 'host-1' twice");
  }

  /** An empty host list is refused: the frontends would have nowhere to send events. */
  @Test
  void parse_emptyHosts_isRefused() {
    String json = withHosts("[]");

    assertThatThrownBy(() -> ClusterConfig.parse(json))
        .hasMessage("key 'hosts' must list at least one host");
  }

  /** Without a bind address the agent listens on loopback, as before the key existed. */
  @Test
  void parse_noBind_defaultsToLoopback() {
    assertThat(ClusterConfig.parse(VALID).hostAgent().bind()).isEqualTo("127.0.0.1");
  }

  /** An agent in a network namespace of its own listens on that namespace's address. */
  @Test
  void parse_bind_isRead() {
    String json = VALID.replace("\"port\": 18090", "\"port\": 18090, \"bind\": \"10.213.7.11\"");

    assertThat(ClusterConfig.parse(json).hostAgent().bind()).isEqualTo("10.213.7.11");
  }

  /** A bind address that is not an IPv4 literal is named with its value. */
  @Test
  void parse_badBind_namesKeyAndValue() {
    for (String bad : new String[] {"localhost", "10.213.7.256", "10.213.7", "::1", ""}) {
      String json = VALID.replace("\"port\": 18090", "\"port\": 18090, \"bind\": \"" + bad + "\"");

      assertThatThrownBy(() -> ClusterConfig.parse(json))
          .hasMessage(
              "key 'host_agent.bind' must be an IPv4 address like 127.0.0.1, got '" + bad + "'");
    }
  }
}
