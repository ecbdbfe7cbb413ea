package dev.sand.contracts;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.yaml.snakeyaml.Yaml;

/**
 * The schemas of {@code frontend/openapi.yaml} (system property {@code sand.openapi}, set by this
 * module's pom), for the tests that check Java's spelling of a shape against its one declaration.
 */
final class OpenApi {
  private final Map<?, ?> schemas;

  private OpenApi(Map<?, ?> schemas) {
    this.schemas = schemas;
  }

  static OpenApi load() {
    Path path = Path.of(System.getProperty("sand.openapi", "../../frontend/openapi.yaml"));
    try (Reader in = Files.newBufferedReader(path)) {
      Map<?, ?> document = (Map<?, ?>) new Yaml().load(in);
      return new OpenApi(map(map(document, "components"), "schemas"));
    } catch (IOException e) {
      throw new IllegalStateException(path + " is unreadable", e);
    }
  }

  /** The property names of schema {@code name}. */
  Set<String> properties(String name) {
    return strings(map(schema(name), "properties").keySet());
  }

  /** The required property names of schema {@code name}. */
  Set<String> required(String name) {
    return strings((List<?>) schema(name).get("required"));
  }

  /** The values property {@code property} of schema {@code name} enumerates. */
  Set<String> enumOf(String name, String property) {
    return strings((List<?>) map(map(schema(name), "properties"), property).get("enum"));
  }

  private Map<?, ?> schema(String name) {
    return map(schemas, name);
  }

  private static Map<?, ?> map(Map<?, ?> parent, String key) {
    if (!(parent.get(key) instanceof Map<?, ?> child)) {
      throw new IllegalStateException("openapi.yaml: no object '" + key + "'");
    }
    return child;
  }

  private static Set<String> strings(java.util.Collection<?> values) {
    Set<String> out = new TreeSet<>();
    values.forEach(value -> out.add(String.valueOf(value)));
    return out;
  }
}
