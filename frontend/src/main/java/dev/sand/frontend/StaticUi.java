package dev.sand.frontend;

import dev.sand.service.JsonHttp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http.HttpStatus;
import org.eclipse.jetty.http.content.HttpContent;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.ResourceService;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.eclipse.jetty.server.handler.ResourceHandler;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.resource.ResourceFactory;

/**
 * The built web GUI (a single-page app) at {@code /ui/}, from {@code frontend.ui_dir}: no token
 * needed (the files hold no data; the app calls {@code /v1} with the user's token).
 *
 * <p>Files are served by Jetty's own {@link ResourceHandler} under a {@code /ui} {@link
 * ContextHandler}: it resolves paths inside the directory only (Jetty refuses {@code ..} and
 * encoded separators before any handler runs; the context has no alias check, so no symlink is
 * followed and such a path answers as a missing file), and it sets content types, ETags and ranges.
 * Added here: GET and HEAD only; {@code nosniff} on everything; the hashed build output under
 * {@code assets/} cached for a year; everything else (index.html) revalidated on each load and sent
 * with a strict Content-Security-Policy; any path that is not a file answers index.html, so the
 * app's own routes ({@code /ui/apps/hello}) load it (a missing {@code assets/} file is a 404: it is
 * a broken build, not a route). Without a built GUI every path answers 503 saying how to build it.
 *
 * <p>The directory is looked at per request, so a GUI built after the frontend started is served at
 * once. Thread-safe.
 */
final class StaticUi extends Handler.Wrapper {
  static final String CONTEXT = "/ui";

  /** Allows the app's own scripts, styles (CodeMirror sets inline styles) and data: images. */
  static final String CONTENT_SECURITY_POLICY =
      "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:;"
          + " object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'";

  static final String NOT_BUILT = "the GUI is not built: run make setup";
  private static final String ASSETS = "/assets/";
  private static final String IMMUTABLE = "public, max-age=31536000, immutable";

  private final Path dir;
  private volatile ResourceHandler files;

  private StaticUi(Path dir) {
    super(true); // dynamic: the file handler is added once the GUI is there
    this.dir = dir;
  }

  /**
   * The handler of {@code /ui} and everything below it, serving {@code dir} (null: none configured,
   * every request answers 503).
   */
  static ContextHandler context(Path dir) {
    ContextHandler context = new ContextHandler(CONTEXT);
    // no alias is served: a symlink inside the GUI leading elsewhere answers as a missing file
    context.clearAliasChecks();
    context.setHandler(new StaticUi(dir));
    return context;
  }

  /**
   * The file handler, made on the first request that finds the GUI built (Jetty refuses a base
   * directory that does not exist), on the directory's real path (so that only links inside it are
   * aliases).
   */
  private synchronized ResourceHandler files() throws Exception {
    if (files == null) {
      ResourceHandler made = new ResourceHandler();
      made.setBaseResource(ResourceFactory.of(this).newResource(dir.toRealPath()));
      made.setDirAllowed(false);
      made.setWelcomeFiles("index.html");
      made.setWelcomeMode(ResourceService.WelcomeMode.SERVE);
      // a path that is no file falls through to here: the app's routes get index.html
      made.setHandler(
          new Handler.Abstract() {
            @Override
            public boolean handle(Request request, Response response, Callback callback)
                throws IOException {
              return index(request, response, callback);
            }
          });
      setHandler(made);
      if (!made.isStarted()) {
        made.start(); // this handler runs already: a handler added now is started here
      }
      files = made;
    }
    return files;
  }

  @Override
  public boolean handle(Request request, Response response, Callback callback) throws Exception {
    String method = request.getMethod();
    if (!"GET".equals(method) && !"HEAD".equals(method)) {
      response.getHeaders().put(HttpHeader.ALLOW, "GET, HEAD");
      JsonHttp.error(
          response,
          callback,
          HttpStatus.METHOD_NOT_ALLOWED_405,
          method + " not allowed on " + request.getHttpURI().getPath() + " (allowed: GET, HEAD)");
      return true;
    }
    if (!built()) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, NOT_BUILT);
      return true;
    }
    response.getHeaders().put("X-Content-Type-Options", "nosniff");
    String path = Request.getPathInContext(request);
    if (path.startsWith(ASSETS)) {
      response.getHeaders().put(HttpHeader.CACHE_CONTROL, IMMUTABLE);
    } else {
      revalidated(response);
    }
    return files().handle(request, response, callback);
  }

  /** Whether {@code dir} holds a built GUI (its index.html). */
  private boolean built() {
    return dir != null && Files.isRegularFile(dir.resolve("index.html"));
  }

  /** index.html for a path that is no file; 404 for a missing build asset. */
  private boolean index(Request request, Response response, Callback callback) throws IOException {
    String path = Request.getPathInContext(request);
    if (path.startsWith(ASSETS)) {
      response.getHeaders().remove(HttpHeader.CACHE_CONTROL);
      JsonHttp.error(
          response, callback, HttpStatus.NOT_FOUND_404, "no such file: " + CONTEXT + path);
      return true;
    }
    ResourceHandler handler = files;
    HttpContent index = handler.getHttpContentFactory().getContent("/index.html");
    if (index == null) {
      JsonHttp.error(response, callback, HttpStatus.SERVICE_UNAVAILABLE_503, NOT_BUILT);
      return true;
    }
    revalidated(response);
    handler.getResourceService().doGet(request, response, callback, index);
    return true;
  }

  private static void revalidated(Response response) {
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-cache");
    response.getHeaders().put("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  }
}
