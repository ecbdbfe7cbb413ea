package dev.sand.frontend;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GUI's files at /ui/ on a Jetty server wired as the frontend wires it (the files first, then
 * the API, here a stand-in answering 404): a tiny built GUI in a temp dir, with a secret beside it
 * that no path may reach.
 */
@Timeout(30)
class StaticUiTest {
  static final String INDEX = "<!doctype html><title>SAND</title><div id=root></div>";
  static final String SECRET = "top-secret-token-do-not-serve";

  @TempDir Path root;
  private Server server;
  private final HttpClient http = HttpClient.newHttpClient();

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.stop();
    }
  }

  private Path built() throws IOException {
    Path dist = root.resolve("dist");
    Files.createDirectories(dist.resolve("assets"));
    Files.writeString(dist.resolve("index.html"), INDEX);
    Files.writeString(dist.resolve("assets/index-3f2a9c.js"), "console.log('sand')");
    Files.writeString(dist.resolve("assets/index-77aa01.css"), "body{margin:0}");
    Files.writeString(root.resolve("secret.txt"), SECRET);
    Files.createDirectories(root.resolve("conf"));
    Files.writeString(root.resolve("conf/cluster.json"), SECRET);
    return dist;
  }

  private int start(Path dir) throws Exception {
    server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(0);
    server.addConnector(connector);
    server.setErrorHandler(new JsonHttp.JsonErrorHandler());
    Handler api =
        new Handler.Abstract() {
          @Override
          public boolean handle(Request request, Response response, Callback callback) {
            JsonHttp.error(response, callback, 404, "api: " + request.getHttpURI().getPath());
            return true;
          }
        };
    server.setHandler(new Handler.Sequence(StaticUi.context(dir), api));
    server.start();
    return connector.getLocalPort();
  }

  private HttpResponse<String> get(int port, String path) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** The request line as written, bytes untouched by any client's normalization. */
  private static String raw(int port, String method, String target) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      OutputStream out = socket.getOutputStream();
      out.write(
          (method + " " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
              .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void root_servesIndexWithStrictPolicyAndNoCache() throws Exception {
    int port = start(built());

    HttpResponse<String> index = get(port, "/ui/");

    assertThat(index.statusCode()).isEqualTo(200);
    assertThat(index.body()).isEqualTo(INDEX);
    assertThat(index.headers().firstValue("Content-Type"))
        .hasValueSatisfying(t -> assertThat(t).startsWith("text/html"));
    assertThat(index.headers().firstValue("Cache-Control")).hasValue("no-cache");
    assertThat(index.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
    assertThat(index.headers().firstValue("Content-Security-Policy"))
        .hasValueSatisfying(
            csp ->
                assertThat(csp)
                    .startsWith("default-src 'self'; style-src 'self' 'unsafe-inline';")
                    .doesNotContain("unsafe-eval")
                    .doesNotContain("script-src"));
  }

  @Test
  void assets_haveTheirTypeAndAreCachedForAYear() throws Exception {
    int port = start(built());

    HttpResponse<String> js = get(port, "/ui/assets/index-3f2a9c.js");
    HttpResponse<String> css = get(port, "/ui/assets/index-77aa01.css");

    assertThat(js.statusCode()).isEqualTo(200);
    assertThat(js.body()).isEqualTo("console.log('sand')");
    assertThat(js.headers().firstValue("Content-Type").orElseThrow()).contains("javascript");
    assertThat(js.headers().firstValue("Cache-Control"))
        .hasValue("public, max-age=31536000, immutable");
    assertThat(js.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
    assertThat(css.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/css");
  }

  /** The app's own routes load index.html; a missing build asset is a 404, not index.html. */
  @Test
  void unknownPath_answersIndex_butMissingAssetIs404() throws Exception {
    int port = start(built());

    HttpResponse<String> route = get(port, "/ui/apps/hello");
    HttpResponse<String> deep = get(port, "/ui/executions/exec-1/states");
    HttpResponse<String> asset = get(port, "/ui/assets/gone-123.js");

    assertThat(route.statusCode()).isEqualTo(200);
    assertThat(route.body()).isEqualTo(INDEX);
    assertThat(route.headers().firstValue("Content-Security-Policy")).isPresent();
    assertThat(route.headers().firstValue("Cache-Control")).hasValue("no-cache");
    assertThat(deep.body()).isEqualTo(INDEX);
    assertThat(asset.statusCode()).isEqualTo(404);
    assertThat(asset.body()).contains("no such file: /ui/assets/gone-123.js");
    assertThat(asset.headers().firstValue("Cache-Control")).hasValue("no-store");
  }

  @Test
  void traversal_neverReachesFilesOutsideTheGui() throws Exception {
    Path dist = built();
    // a link inside the GUI leading out of it
    Files.createSymbolicLink(dist.resolve("leak.txt"), root.resolve("secret.txt"));
    int port = start(dist);

    for (String target :
        new String[] {
          "/ui/../secret.txt",
          "/ui/../conf/cluster.json",
          "/ui/%2e%2e/secret.txt",
          "/ui/%2E%2E/conf/cluster.json",
          "/ui/..%2fsecret.txt",
          "/ui/..%2Fconf%2Fcluster.json",
          "/ui/assets/..%2f..%2fsecret.txt",
          "/ui/%2e%2e%2fsecret.txt",
          "/ui/..\\secret.txt",
          "/ui/..%5csecret.txt",
          "/ui/%252e%252e/secret.txt",
          "/ui/./../secret.txt",
          "/ui//../secret.txt",
          "/ui/leak.txt",
          "/ui/assets/%00../../secret.txt",
        }) {
      String answer = raw(port, "GET", target);
      assertThat(answer).as(target).doesNotContain(SECRET);
      // refused by Jetty (400), or not under /ui (the API's 404), or index.html as for any route
      assertThat(answer).as(target).matches("(?s)HTTP/1\\.1 (400|404|200) .*");
      if (answer.startsWith("HTTP/1.1 200")) {
        assertThat(answer).as(target).endsWith(INDEX);
      }
    }
  }

  @Test
  void onlyGetAndHead() throws Exception {
    int port = start(built());

    String head = raw(port, "HEAD", "/ui/");
    String post = raw(port, "POST", "/ui/");
    String delete = raw(port, "DELETE", "/ui/index.html");

    assertThat(head).startsWith("HTTP/1.1 200");
    assertThat(post).startsWith("HTTP/1.1 405").contains("Allow: GET, HEAD");
    assertThat(post).contains("\"error\":\"POST not allowed on /ui/");
    assertThat(delete).startsWith("HTTP/1.1 405");
  }

  /** Without a build: 503 saying how to build it; once built, served without a restart. */
  @Test
  void missingBuild_answers503_untilBuilt() throws Exception {
    Path dist = root.resolve("dist");
    int port = start(dist);

    HttpResponse<String> missing = get(port, "/ui/");
    HttpResponse<String> route = get(port, "/ui/apps");

    assertThat(missing.statusCode()).isEqualTo(503);
    assertThat(missing.headers().firstValue("Content-Type").orElseThrow())
        .startsWith("application/json");
    assertThat(missing.body()).isEqualTo("{\"error\":\"" + StaticUi.NOT_BUILT + "\"}");
    assertThat(route.statusCode()).isEqualTo(503);

    built();
    HttpResponse<String> now = get(port, "/ui/");
    assertThat(now.statusCode()).isEqualTo(200);
    assertThat(now.body()).isEqualTo(INDEX);
  }

  @Test
  void noDirectoryConfigured_answers503() throws Exception {
    int port = start(null);

    HttpResponse<String> missing = get(port, "/ui/");

    assertThat(missing.statusCode()).isEqualTo(503);
    assertThat(missing.body()).contains(StaticUi.NOT_BUILT);
  }

  /** /ui without its slash is sent to /ui/, so that the app's relative URLs resolve. */
  @Test
  void contextWithoutSlash_redirects() throws Exception {
    int port = start(built());

    String answer = raw(port, "GET", "/ui");

    assertThat(answer).matches("(?s)HTTP/1\\.1 30[12] .*");
    assertThat(answer).containsPattern("(?i)location: (http://x)?/ui/\r\n");
  }

  /** Paths outside /ui are the API's, untouched. */
  @Test
  void otherPaths_goToTheApi() throws Exception {
    int port = start(built());

    HttpResponse<String> api = get(port, "/v1/apps");
    HttpResponse<String> lookalike = get(port, "/uix/index.html");

    assertThat(api.body()).isEqualTo("{\"error\":\"api: /v1/apps\"}");
    assertThat(lookalike.body()).isEqualTo("{\"error\":\"api: /uix/index.html\"}");
  }
}
