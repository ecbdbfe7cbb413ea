package dev.sand.bus;

import dev.sand.bus.thrift.EventMessage;
import java.io.ByteArrayOutputStream;
import org.apache.thrift.TConfiguration;
import org.apache.thrift.TException;
import org.apache.thrift.protocol.TCompactProtocol;
import org.apache.thrift.transport.TIOStreamTransport;
import org.apache.thrift.transport.TMemoryInputTransport;

/**
 * Encodes and decodes {@link EventMessage} with Thrift's compact protocol, the wire format of the
 * local bus (Redis values) and the global bus (Kafka record values). Python uses the same protocol
 * ({@code TCompactProtocol} from the {@code thrift} package) on the same IDL.
 *
 * <p>Stateless and thread-safe: every call builds its own transport, which costs a few small
 * allocations and avoids sharing Thrift's non-thread-safe serializers.
 */
public final class EventCodec {
  /**
   * The largest encoded event accepted when decoding, in bytes. Bounds what a corrupt or hostile
   * length prefix can make the decoder allocate; payloads are limited far below this by the
   * frontend ({@code frontend.max_payload_kb}).
   */
  public static final int MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

  private static final TConfiguration CONFIGURATION =
      TConfiguration.custom()
          .setMaxMessageSize(MAX_MESSAGE_BYTES)
          .setMaxFrameSize(MAX_MESSAGE_BYTES)
          .build();

  private EventCodec() {}

  /**
   * Encodes {@code message}.
   *
   * @throws EventCodecException if Thrift refuses the message (e.g. a set enum field holds null)
   */
  public static byte[] encode(EventMessage message) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try {
      message.write(new TCompactProtocol(new TIOStreamTransport(CONFIGURATION, out)));
    } catch (TException e) {
      throw new EventCodecException(
          "cannot encode event of execution '" + message.getExecution_id() + "': " + e, e);
    }
    return out.toByteArray();
  }

  /**
   * Decodes one event from exactly {@code bytes}.
   *
   * @throws EventCodecException if the bytes are not a compact-protocol {@code EventMessage}
   */
  public static EventMessage decode(byte[] bytes) {
    if (bytes.length > MAX_MESSAGE_BYTES) {
      throw new EventCodecException(
          "cannot decode event: " + bytes.length + " bytes exceeds " + MAX_MESSAGE_BYTES, null);
    }
    EventMessage message = new EventMessage();
    TMemoryInputTransport in;
    try {
      in = new TMemoryInputTransport(CONFIGURATION, bytes);
      message.read(new TCompactProtocol(in));
    } catch (TException | RuntimeException e) {
      // RuntimeException too: Thrift reports some malformed input as unchecked exceptions
      throw new EventCodecException(
          "cannot decode event of " + bytes.length + " bytes: " + e.getMessage(), e);
    }
    if (in.getBytesRemainingInBuffer() != 0) {
      throw new EventCodecException(
          "cannot decode event: " + in.getBytesRemainingInBuffer() + " trailing bytes", null);
    }
    return message;
  }
}
