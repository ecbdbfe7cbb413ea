package dev.sand.contracts;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** Java's history event types are the ones {@code HistoryEvent.type} enumerates in openapi.yaml. */
class HistoryTypesTest {
  /** Every constant of the class (by reflection: one added later is checked too). */
  static Set<String> constants(Class<?> type) throws IllegalAccessException {
    Set<String> values = new TreeSet<>();
    for (Field field : type.getDeclaredFields()) {
      int modifiers = field.getModifiers();
      if (Modifier.isStatic(modifiers)
          && Modifier.isPublic(modifiers)
          && field.getType() == String.class) {
        values.add((String) field.get(null));
      }
    }
    return values;
  }

  @Test
  void everyType_isTheDocumentsAndNoneIsMissing() throws IllegalAccessException {
    assertThat(constants(HistoryTypes.class))
        .isEqualTo(OpenApi.load().enumOf("HistoryEvent", "type"));
  }
}
