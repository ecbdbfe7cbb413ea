package dev.sand.frontend;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The W3C Trace Context {@code traceparent} header of an invocation (decision 0019): {@code
 * version-traceid-parentid-flags} in lowercase hex. An invalid value is ignored, never an error, as
 * the specification says: a caller that sent one simply gets no trace of its own.
 */
final class TraceParent {
  /** The request header. */
  static final String HEADER = "traceparent";

  private static final Pattern FORMAT =
      Pattern.compile("([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?");
  private static final String ZERO_TRACE = "0".repeat(32);
  private static final String ZERO_SPAN = "0".repeat(16);

  private TraceParent() {}

  /**
   * {@code value} as a version-00 traceparent (the trace id, the caller's span id and flags), or
   * null when it is absent or invalid: version {@code ff}, a version-00 value with more fields, an
   * all-zero trace or span id, upper-case hex or the wrong lengths. A later version's extra fields
   * are dropped (the spec: parse what version 00 defines).
   */
  static String normalize(String value) {
    if (value == null) {
      return null;
    }
    Matcher m = FORMAT.matcher(value.strip());
    if (!m.matches()) {
      return null;
    }
    String version = m.group(1);
    if ("ff".equals(version) || ("00".equals(version) && m.group(5) != null)) {
      return null;
    }
    if (ZERO_TRACE.equals(m.group(2)) || ZERO_SPAN.equals(m.group(3))) {
      return null;
    }
    return "00-" + m.group(2) + "-" + m.group(3) + "-" + m.group(4);
  }
}
