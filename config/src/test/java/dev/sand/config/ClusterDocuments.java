package dev.sand.config;

/** The cluster.json documents the tests of {@link ClusterConfig} start from. */
final class ClusterDocuments {
  /** A valid file with the keys `sand up` always writes and none of the optional ones. */
  static final String VALID =
      """
      {"state_dir": "/abs/state", "host_id": "host-1",
       "redis": {"socket": "/abs/state/run/redis.sock"},
       "kafka": {"bootstrap": "127.0.0.1:19092"},
       "cassandra": {"contact_point": "127.0.0.1:19042", "datacenter": "datacenter1",
                     "keyspace": "sand"},
       "docker": {"host": "unix:///abs/state/run/docker.sock", "enabled": true},
       "frontend": {"ports": [18081, 18082], "max_payload_kb": 256},
       "host_agent": {"port": 18090},
       "nginx": {"port": 18080}}
      """;

  private ClusterDocuments() {}

  /** {@link #VALID} with the host list {@code hosts} (a JSON array). */
  static String withHosts(String hosts) {
    return VALID.replace(
        "\"nginx\": {\"port\": 18080}", "\"nginx\": {\"port\": 18080}, \"hosts\": " + hosts);
  }

  /** {@link #VALID} with the sandbox section {@code sandbox} (a JSON object). */
  static String withSandbox(String sandbox) {
    String valid = VALID.strip();
    return valid.substring(0, valid.length() - 1) + ", \"sandbox\": " + sandbox + "}";
  }
}
