package dev.sand.agent.data;

import dev.sand.contracts.DataReply;
import dev.sand.contracts.DataRequest;
import dev.sand.contracts.contractsConstants;
import java.io.ByteArrayOutputStream;
import org.apache.thrift.TConfiguration;
import org.apache.thrift.TException;
import org.apache.thrift.protocol.TCompactProtocol;
import org.apache.thrift.transport.TIOStreamTransport;
import org.apache.thrift.transport.TMemoryInputTransport;

/**
 * The wire format of global-data requests and replies on the local bus: Thrift's compact protocol
 * on the structs of {@code contracts.thrift}, as the Python SDK writes them. Stateless and
 * thread-safe.
 */
final class DataCodec {
  /**
   * The largest request accepted when decoding: the value limit and room for the rest. Bounds what
   * a hostile length prefix can make the decoder allocate.
   */
  static final int MAX_REQUEST_BYTES = contractsConstants.GDATA_MAX_VALUE_BYTES + 64 * 1024;

  private static final TConfiguration CONFIGURATION =
      TConfiguration.custom()
          .setMaxMessageSize(MAX_REQUEST_BYTES)
          .setMaxFrameSize(MAX_REQUEST_BYTES)
          .build();

  // replies may list many keys; they are ours, so only Thrift's own bound applies
  private static final TConfiguration REPLY_CONFIGURATION = TConfiguration.DEFAULT;

  private DataCodec() {}

  /**
   * Decodes one request from exactly {@code bytes}.
   *
   * @throws IllegalArgumentException saying why the bytes are not a request
   */
  static DataRequest decodeRequest(byte[] bytes) {
    if (bytes.length > MAX_REQUEST_BYTES) {
      throw new IllegalArgumentException(
          "request of " + bytes.length + " bytes exceeds " + MAX_REQUEST_BYTES);
    }
    DataRequest request = new DataRequest();
    try {
      TMemoryInputTransport in = new TMemoryInputTransport(CONFIGURATION, bytes);
      request.read(new TCompactProtocol(in));
      if (in.getBytesRemainingInBuffer() != 0) {
        throw new IllegalArgumentException(
            "request has " + in.getBytesRemainingInBuffer() + " trailing bytes");
      }
    } catch (TException | RuntimeException e) {
      if (e instanceof IllegalArgumentException illegal) {
        throw illegal;
      }
      // RuntimeException too: Thrift reports some malformed input as unchecked exceptions
      throw new IllegalArgumentException(
          "not a data request (" + bytes.length + " bytes): " + e.getMessage(), e);
    }
    return request;
  }

  /** Encodes {@code reply}. */
  static byte[] encodeReply(DataReply reply) {
    return encode(reply, REPLY_CONFIGURATION);
  }

  /** Encodes {@code request} (tests, and anything that speaks for a grain). */
  static byte[] encodeRequest(DataRequest request) {
    return encode(request, CONFIGURATION);
  }

  /** Decodes a reply (tests). */
  static DataReply decodeReply(byte[] bytes) {
    DataReply reply = new DataReply();
    try {
      reply.read(new TCompactProtocol(new TMemoryInputTransport(REPLY_CONFIGURATION, bytes)));
    } catch (TException e) {
      throw new IllegalArgumentException("not a data reply: " + e.getMessage(), e);
    }
    return reply;
  }

  private static byte[] encode(org.apache.thrift.TBase<?, ?> struct, TConfiguration config) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(128);
    try {
      struct.write(new TCompactProtocol(new TIOStreamTransport(config, out)));
    } catch (TException e) {
      throw new IllegalStateException("cannot encode " + struct.getClass().getSimpleName(), e);
    }
    return out.toByteArray();
  }
}
