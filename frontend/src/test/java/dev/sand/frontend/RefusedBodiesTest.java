package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.service.JsonHttp;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A refusal written before its request's body was read: with {@link RefusedBodies} the body is read
 * first and the connection stays whole for the next request (as nginx needs to relay the refusal);
 * without it Jetty closes the connection with the body unread (the 502 of issue 22).
 */
@Timeout(30)
class RefusedBodiesTest {
  private static final int BODY = 2 * 1024 * 1024;
  private Server server;
  private final AtomicInteger handled = new AtomicInteger();

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }

  /** Refuses every POST at once from its headers, as a route without a token does. */
  private Handler refuser() {
    return new Handler.Abstract() {
      @Override
      public boolean handle(Request request, Response response, Callback callback) {
        handled.incrementAndGet();
        if ("POST".equals(request.getMethod())) {
          JsonHttp.error(response, callback, HttpStatus.UNAUTHORIZED_401, "no token");
        } else {
          JsonHttp.send(response, callback, HttpStatus.OK_200, Map.of("ok", true));
        }
        return true;
      }
    };
  }

  private int start(Handler handler) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server, 1, 1);
    connector.setHost("127.0.0.1");
    server.addConnector(connector);
    server.setHandler(handler);
    server.start();
    return connector.getLocalPort();
  }

  /**
   * Sends a 2 MiB POST, then a GET, on one connection (the body written by another thread, as a
   * proxy streams it); returns everything the server sent until it closed or went quiet.
   */
  private static String postThenGet(int port) throws Exception {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      socket.setSoTimeout(3000);
      OutputStream out = socket.getOutputStream();
      String head =
          "POST /v1/apps/x/invoke HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
              + "Content-Length: "
              + BODY
              + "\r\n\r\n";
      CompletableFuture<Boolean> sent =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  out.write(head.getBytes(StandardCharsets.US_ASCII));
                  byte[] chunk = new byte[64 * 1024];
                  Arrays.fill(chunk, (byte) ' ');
                  for (int n = 0; n < BODY; n += chunk.length) {
                    out.write(chunk);
                  }
                  out.write("GET /health HTTP/1.1\r\nHost: t\r\n\r\n".getBytes());
                  out.flush();
                  return true;
                } catch (IOException e) {
                  return false; // the server closed the connection under the body
                }
              });
      String answers = readAll(socket.getInputStream());
      sent.join();
      return answers;
    }
  }

  private static String readAll(InputStream in) throws IOException {
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    byte[] buffer = new byte[8192];
    try {
      for (int n; (n = in.read(buffer)) > 0; ) {
        got.write(buffer, 0, n);
        if (got.toString(StandardCharsets.US_ASCII).contains("\"ok\":true")) {
          break;
        }
      }
    } catch (IOException e) {
      // a reset or the read timeout: what arrived so far is the answer
    }
    return got.toString(StandardCharsets.US_ASCII);
  }

  @Test
  void refusalBeforeTheBody_readsTheBody_connectionServesTheNextRequest() throws Exception {
    int port = start(new RefusedBodies(refuser(), 64L * 1024 * 1024));

    String answers = postThenGet(port);

    assertThat(answers).startsWith("HTTP/1.1 401 ").contains("no token");
    assertThat(answers).doesNotContain("Connection: close");
    assertThat(answers).contains("HTTP/1.1 200 ").contains("\"ok\":true");
    assertThat(handled).hasValue(2);
  }

  @Test
  void withoutIt_jettyClosesTheConnectionUnderTheBody() throws Exception {
    // the control: the same exchange without the wrapper loses the second request
    int port = start(refuser());

    String answers = postThenGet(port);

    assertThat(answers).startsWith("HTTP/1.1 401 ");
    assertThat(answers).doesNotContain("\"ok\":true");
    assertThat(handled).hasValue(1);
  }

  @Test
  void bodyOverTheLimit_isRefusedAnyway_connectionClosed() throws Exception {
    int port = start(new RefusedBodies(refuser(), 256 * 1024));

    String answers = postThenGet(port);

    assertThat(answers).startsWith("HTTP/1.1 401 ");
    assertThat(answers).doesNotContain("\"ok\":true");
  }
}
