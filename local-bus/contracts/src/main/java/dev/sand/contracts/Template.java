package dev.sand.contracts;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fills the {@code {field}} placeholders of a contract template (contracts.thrift) in one pass, so
 * a value is never read as a placeholder itself — the same semantics as Python's {@code str.format}
 * on these templates.
 */
final class Template {
  private static final Pattern FIELD = Pattern.compile("\\{([a-z_]+)}");

  private Template() {}

  /**
   * Returns {@code template} with each placeholder replaced by its value.
   *
   * @throws IllegalArgumentException when the template names a field {@code values} lacks
   */
  static String fill(String template, Map<String, String> values) {
    Matcher matcher = FIELD.matcher(template);
    StringBuilder out = new StringBuilder(template.length() + 32);
    while (matcher.find()) {
      String value = values.get(matcher.group(1));
      if (value == null) {
        throw new IllegalArgumentException(
            "template '" + template + "' needs field '" + matcher.group(1) + "'");
      }
      matcher.appendReplacement(out, Matcher.quoteReplacement(value));
    }
    matcher.appendTail(out);
    return out.toString();
  }
}
