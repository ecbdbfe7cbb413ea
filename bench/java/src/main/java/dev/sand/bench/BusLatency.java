package dev.sand.bench;

import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * One-way latency of a ~200-byte message over the local bus (Redis LPUSH → BRPOP, Lettuce over
 * the unix socket) and the global bus (Kafka produce → consume, kafka-clients).
 *
 * <p>Producer and consumer are two threads of this one JVM, each with its own connection / client
 * (the output says {@code "processes": 1}). Each message carries its send time as wall-clock epoch
 * microseconds ({@link Instant#now()}); the consumer subtracts it from its own {@code Instant.now()}.
 * Messages go one at a time: the producer waits until the consumer has received the previous one,
 * then sleeps {@code --gap-ms}, then sends the next. The first {@code --warmup} messages are
 * dropped.
 *
 * <p>Output: one JSON line per series on stdout; errors go to stderr with exit status 1.
 */
public final class BusLatency {
  static final String TOPIC = "sand.bench.latency";
  static final int PAYLOAD_BYTES = 200;
  static final Duration RECEIVE_TIMEOUT = Duration.ofSeconds(10);

  private BusLatency() {}

  record Options(
      String redisSocket, String redisPassword, String kafka, int n, double gapMs, int warmup) {}

  /** A consumer that delivers each received message's latency (ms) to a waiting producer. */
  static final class Receipts {
    private final Semaphore received = new Semaphore(0);
    private final List<Double> samples = new ArrayList<>();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    synchronized void record(double ms) {
      samples.add(ms);
      received.release();
    }

    void fail(Throwable t) {
      failure.compareAndSet(null, t);
      received.release();
    }

    void await(String series, int seq) throws InterruptedException {
      if (!received.tryAcquire(RECEIVE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new IllegalStateException(
            series + ": message " + seq + " not received within " + RECEIVE_TIMEOUT);
      }
      Throwable t = failure.get();
      if (t != null) {
        throw new IllegalStateException(series + ": consumer failed: " + t, t);
      }
    }

    synchronized List<Double> samples() {
      return new ArrayList<>(samples);
    }
  }

  public static void main(String[] args) {
    try {
      Options o = parse(args);
      emit("java redis", redis(o), o);
      emit("java kafka", kafka(o), o);
    } catch (Exception e) {
      System.err.println("bus-latency: " + e);
      System.exit(1);
    }
  }

  static Options parse(String[] args) {
    String socket = null;
    String password = "";
    String kafka = null;
    int n = 200;
    double gapMs = 5;
    int warmup = 500;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("missing value after " + a);
      }
      String v = args[++i];
      switch (a) {
        case "--redis-socket" -> socket = v;
        case "--redis-password" -> password = v;
        case "--kafka" -> kafka = v;
        case "--n" -> n = Integer.parseInt(v);
        case "--gap-ms" -> gapMs = Double.parseDouble(v);
        case "--warmup" -> warmup = Integer.parseInt(v);
        default -> throw new IllegalArgumentException("unknown option " + a);
      }
    }
    if (socket == null || kafka == null || n < 1 || gapMs < 0 || warmup < 0) {
      throw new IllegalArgumentException(
          "usage: java -jar bus-latency.jar --redis-socket PATH [--redis-password PW]"
              + " --kafka BOOTSTRAP [--n N] [--gap-ms G] [--warmup W]");
    }
    return new Options(socket, password, kafka, n, gapMs, warmup);
  }

  static long nowMicros() {
    Instant t = Instant.now();
    return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000L;
  }

  /** {@code "<epoch micros> <seq> xxxx…"}, padded to {@link #PAYLOAD_BYTES}. */
  static byte[] payload(int seq) {
    StringBuilder s = new StringBuilder(PAYLOAD_BYTES);
    s.append(nowMicros()).append(' ').append(seq).append(' ');
    while (s.length() < PAYLOAD_BYTES) {
      s.append('x');
    }
    return s.toString().getBytes(StandardCharsets.US_ASCII);
  }

  static double latencyMs(byte[] message) {
    long received = nowMicros();
    String s = new String(message, 0, Math.min(message.length, 40), StandardCharsets.US_ASCII);
    long sent = Long.parseLong(s.substring(0, s.indexOf(' ')));
    return (received - sent) / 1000.0;
  }

  static void pause(double gapMs) throws InterruptedException {
    long nanos = (long) (gapMs * 1_000_000);
    if (nanos > 0) {
      Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
    }
  }

  static List<Double> redis(Options o) throws Exception {
    RedisURI.Builder b =
        RedisURI.Builder.socket(o.redisSocket()).withTimeout(Duration.ofSeconds(30));
    if (!o.redisPassword().isEmpty()) {
      b.withPassword(o.redisPassword().toCharArray());
    }
    RedisURI uri = b.build();
    String key = "sand.bench.latency.java." + UUID.randomUUID();
    int total = o.n() + o.warmup();
    RedisClient client = RedisClient.create();
    try (StatefulRedisConnection<byte[], byte[]> prod =
            client.connect(io.lettuce.core.codec.ByteArrayCodec.INSTANCE, uri);
        StatefulRedisConnection<byte[], byte[]> cons =
            client.connect(io.lettuce.core.codec.ByteArrayCodec.INSTANCE, uri)) {
      byte[] k = key.getBytes(StandardCharsets.UTF_8);
      RedisCommands<byte[], byte[]> p = prod.sync();
      RedisCommands<byte[], byte[]> c = cons.sync();
      Receipts receipts = new Receipts();
      Thread consumer =
          new Thread(
              () -> {
                try {
                  for (int i = 0; i < total; i++) {
                    KeyValue<byte[], byte[]> kv = c.brpop(10, k);
                    if (kv == null || !kv.hasValue()) {
                      throw new IllegalStateException("BRPOP " + key + " timed out");
                    }
                    receipts.record(latencyMs(kv.getValue()));
                  }
                } catch (RuntimeException e) {
                  receipts.fail(e);
                }
              },
              "redis-consumer");
      consumer.setDaemon(true);
      consumer.start();
      for (int i = 0; i < total; i++) {
        pause(o.gapMs());
        p.lpush(k, payload(i));
        receipts.await("java redis", i);
      }
      consumer.join(RECEIVE_TIMEOUT.toMillis());
      p.del(k);
      List<Double> all = receipts.samples();
      return all.subList(o.warmup(), all.size());
    } catch (io.lettuce.core.RedisException e) {
      throw new IllegalStateException("redis at unix socket " + o.redisSocket() + ": " + e, e);
    } finally {
      client.shutdown();
    }
  }

  static void ensureTopic(String bootstrap) throws InterruptedException {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(props)) {
      Set<String> names = admin.listTopics().names().get(30, TimeUnit.SECONDS);
      if (!names.contains(TOPIC)) {
        try {
          admin
              .createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1)))
              .all()
              .get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          if (!(e.getCause() instanceof TopicExistsException)) {
            throw e;
          }
        }
      }
    } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
      throw new IllegalStateException("kafka at " + bootstrap + ": topic " + TOPIC + ": " + e, e);
    }
  }

  static List<Double> kafka(Options o) throws Exception {
    ensureTopic(o.kafka());
    int total = o.n() + o.warmup();

    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.kafka());
    cp.put(ConsumerConfig.GROUP_ID_CONFIG, "sand.bench.latency.java." + UUID.randomUUID());
    cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "1");
    cp.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, "1");
    cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.kafka());
    pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    pp.put(ProducerConfig.ACKS_CONFIG, "1");
    pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
    pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());

    Receipts receipts = new Receipts();
    Semaphore positioned = new Semaphore(0);
    AtomicBoolean stop = new AtomicBoolean(false);
    Thread consumer =
        new Thread(
            () -> {
              try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
                List<PartitionInfo> infos = c.partitionsFor(TOPIC, Duration.ofSeconds(30));
                List<TopicPartition> parts = new ArrayList<>();
                for (PartitionInfo pi : infos) {
                  parts.add(new TopicPartition(pi.topic(), pi.partition()));
                }
                // position at the end BEFORE the producer starts
                c.assign(parts);
                c.seekToEnd(parts);
                for (TopicPartition tp : parts) {
                  c.position(tp, Duration.ofSeconds(30));
                }
                positioned.release();
                int got = 0;
                while (got < total && !stop.get()) {
                  for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    receipts.record(latencyMs(r.value()));
                    got++;
                  }
                }
              } catch (RuntimeException e) {
                positioned.release();
                receipts.fail(e);
              }
            },
            "kafka-consumer");
    consumer.setDaemon(true);
    consumer.start();
    if (!positioned.tryAcquire(60, TimeUnit.SECONDS)) {
      throw new IllegalStateException("kafka at " + o.kafka() + ": consumer not positioned");
    }
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
      // connect and fetch metadata before the first timed message
      producer.partitionsFor(TOPIC);
      for (int i = 0; i < total; i++) {
        pause(o.gapMs());
        try {
          // send + wait for the ack: the Java equivalent of flush() per message
          producer.send(new ProducerRecord<>(TOPIC, payload(i))).get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          throw new IllegalStateException("kafka at " + o.kafka() + ": produce: " + e, e);
        }
        receipts.await("java kafka", i);
      }
    } finally {
      stop.set(true);
      consumer.join(RECEIVE_TIMEOUT.toMillis());
    }
    List<Double> all = receipts.samples();
    return all.subList(o.warmup(), all.size());
  }

  static void emit(String series, Collection<Double> samples, Options o) {
    StringBuilder s = new StringBuilder();
    s.append("{\"series\":\"").append(series).append("\",\"processes\":1");
    s.append(",\"warmup\":").append(o.warmup());
    s.append(",\"gap_ms\":").append(o.gapMs());
    s.append(",\"samples_ms\":[");
    boolean first = true;
    for (double d : samples) {
      if (!first) {
        s.append(',');
      }
      first = false;
      s.append(String.format(java.util.Locale.ROOT, "%.3f", d));
    }
    s.append("]}");
    System.out.println(s);
    System.out.flush();
  }
}
