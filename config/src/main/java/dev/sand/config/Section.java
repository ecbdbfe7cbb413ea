package dev.sand.config;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * Typed reads from one JSON object of the config file. Every failure is a {@link ConfigException}
 * naming the key relative to this object; {@link #section} adds the enclosing key on the way out.
 * Keys not read are ignored, so the file may carry settings meant for other processes.
 *
 * <p>Every key looked up is recorded ({@link #lookups}), so a test can compare the keys the parser
 * knows with the ones {@code cluster.schema.json} declares (decision 0038).
 */
final class Section {
  private final JsonNode node;
  // the dotted path of this object's keys ("" at the top, "hosts[]." in a list's items)
  private final String path;
  // shared by every Section of one document
  private final Set<String> lookups;

  Section(JsonNode node) {
    this(node, "", new LinkedHashSet<>());
  }

  private Section(JsonNode node, String path, Set<String> lookups) {
    this.node = node;
    this.path = path;
    this.lookups = lookups;
  }

  /**
   * The dotted path of every key looked up so far, present or not, in this object and the ones read
   * through it: {@code redis}, {@code redis.socket}, {@code hosts[].id}.
   */
  Set<String> lookups() {
    return Collections.unmodifiableSet(lookups);
  }

  /** Reads the object under {@code key} and builds a value from it. */
  <T> T section(String key, Function<Section, T> build) {
    JsonNode child = required(key);
    if (!child.isObject()) {
      throw ConfigException.invalid(key, "must be an object, got " + describe(child));
    }
    try {
      return build.apply(new Section(child, path + key + ".", lookups));
    } catch (ConfigException e) {
      throw e.within(key);
    }
  }

  /**
   * Reads the list of objects under {@code key} and builds a value from each; a problem is named
   * {@code key[i].inner}.
   */
  <T> List<T> sections(String key, Function<Section, T> build) {
    JsonNode value = required(key);
    if (!value.isArray()) {
      throw ConfigException.invalid(key, "must be a list of objects, got " + describe(value));
    }
    List<T> result = new ArrayList<>();
    for (int i = 0; i < value.size(); i++) {
      JsonNode item = value.get(i);
      String itemKey = key + "[" + i + "]";
      if (!item.isObject()) {
        throw ConfigException.invalid(itemKey, "must be an object, got " + describe(item));
      }
      try {
        result.add(build.apply(new Section(item, path + key + "[].", lookups)));
      } catch (ConfigException e) {
        throw e.within(itemKey);
      }
    }
    return result;
  }

  /** Whether {@code key} is present and not null. */
  boolean has(String key) {
    lookups.add(path + key);
    JsonNode value = node.get(key);
    return value != null && !value.isNull();
  }

  double number(String key) {
    JsonNode value = required(key);
    if (!value.isNumber()) {
      throw ConfigException.invalid(key, "must be a number, got " + describe(value));
    }
    return value.doubleValue();
  }

  List<String> texts(String key) {
    JsonNode value = required(key);
    if (!value.isArray()) {
      throw ConfigException.invalid(key, "must be a list of strings, got " + describe(value));
    }
    List<String> result = new ArrayList<>();
    for (int i = 0; i < value.size(); i++) {
      JsonNode item = value.get(i);
      if (!item.isTextual()) {
        throw ConfigException.invalid(
            key + "[" + i + "]", "must be a string, got " + describe(item));
      }
      result.add(item.textValue());
    }
    return result;
  }

  String text(String key) {
    JsonNode value = required(key);
    if (!value.isTextual()) {
      throw ConfigException.invalid(key, "must be a string, got " + describe(value));
    }
    return value.textValue();
  }

  int integer(String key) {
    JsonNode value = required(key);
    if (!value.isIntegralNumber() || !value.canConvertToInt()) {
      throw ConfigException.invalid(key, "must be an integer, got " + describe(value));
    }
    return value.intValue();
  }

  boolean bool(String key) {
    JsonNode value = required(key);
    if (!value.isBoolean()) {
      throw ConfigException.invalid(key, "must be true or false, got " + describe(value));
    }
    return value.booleanValue();
  }

  List<Integer> integers(String key) {
    JsonNode value = required(key);
    if (!value.isArray()) {
      throw ConfigException.invalid(key, "must be a list of integers, got " + describe(value));
    }
    List<Integer> result = new ArrayList<>();
    for (int i = 0; i < value.size(); i++) {
      JsonNode item = value.get(i);
      if (!item.isIntegralNumber() || !item.canConvertToInt()) {
        throw ConfigException.invalid(
            key + "[" + i + "]", "must be an integer, got " + describe(item));
      }
      result.add(item.intValue());
    }
    return result;
  }

  private JsonNode required(String key) {
    lookups.add(path + key);
    JsonNode value = node.get(key);
    if (value == null || value.isNull()) {
      throw ConfigException.invalid(key, "is required");
    }
    return value;
  }

  private static String describe(JsonNode value) {
    String text = value.toString();
    if (text.length() > 60) {
      text = text.substring(0, 57) + "...";
    }
    return value.getNodeType().name().toLowerCase(java.util.Locale.ROOT) + " " + text;
  }
}
