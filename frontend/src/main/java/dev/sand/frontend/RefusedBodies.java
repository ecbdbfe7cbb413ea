package dev.sand.frontend;

import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpHeaderValue;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.util.Callback;

/**
 * Reads to its end, and discards, the body of a request that is refused (an answer of 400 or more)
 * before the refusal is written (decision 0024).
 *
 * <p>Why: a route may refuse a request from its headers alone (no token, unknown app, a declared
 * length over the limit) or after reading part of its body. Were the answer written while the body
 * is still arriving, Jetty would close the connection with unread bytes in it; the proxy in front
 * (nginx) then fails to write the rest of the body, answers 502 instead of the refusal and counts a
 * failure against this frontend. Reading the rest first keeps the connection whole and the refusal
 * itself reaches the client.
 *
 * <p>Bounded: at most {@code limitBytes} are discarded (the largest body nginx passes on); beyond
 * that the refusal is written anyway and Jetty closes the connection. Asynchronous: no thread waits
 * for a slow body (nginx buffers bodies, so they arrive at loopback speed anyway). A request that
 * asked for {@code 100-continue} is not read: its client has not sent the body. Successful answers
 * pass through untouched. Thread-safe: one wrapper per request.
 */
final class RefusedBodies extends Handler.Wrapper {
  private final long limitBytes;

  RefusedBodies(Handler handler, long limitBytes) {
    super(handler);
    this.limitBytes = limitBytes;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) throws Exception {
    return super.handle(request, new DrainingResponse(request, response, limitBytes), callback);
  }

  /** A response whose last write, when it refuses, waits until the request's body is read. */
  private static final class DrainingResponse extends Response.Wrapper {
    private final long limitBytes;
    private long discarded;

    DrainingResponse(Request request, Response wrapped, long limitBytes) {
      super(request, wrapped);
      this.limitBytes = limitBytes;
    }

    @Override
    public void write(boolean last, ByteBuffer content, Callback callback) {
      if (last && getStatus() >= 400 && !isCommitted() && !expectsContinue()) {
        discardThen(() -> super.write(true, content, callback));
      } else {
        super.write(last, content, callback);
      }
    }

    private boolean expectsContinue() {
      return getRequest()
          .getHeaders()
          .contains(HttpHeader.EXPECT, HttpHeaderValue.CONTINUE.asString());
    }

    /** Reads and drops the body's chunks as they come, then runs {@code then} (once). */
    private void discardThen(Runnable then) {
      Request request = getRequest();
      while (true) {
        Content.Chunk chunk = request.read();
        if (chunk == null) {
          request.demand(() -> discardThen(then));
          return;
        }
        boolean end = chunk.isLast() || Content.Chunk.isFailure(chunk);
        discarded += chunk.remaining();
        chunk.release();
        if (end || discarded > limitBytes) {
          then.run();
          return;
        }
      }
    }
  }
}
