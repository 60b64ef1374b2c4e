package io.treeline.conf;

import java.util.function.Function;
import java.util.function.Predicate;

/**
 * One configuration key: its name, documentation, type, default and validation, declared once
 * in {@link TreelineConf} (the shape of spark-rapids' {@code ConfEntry}).
 */
public final class ConfEntry<T> {
  private final String key;
  private final String doc;
  private final String type;
  private final T defaultValue;
  private final String defaultText;
  private final Function<String, T> parser;
  private final Predicate<T> check;
  private final String checkDoc;
  private final boolean internal;

  ConfEntry(String key, String doc, String type, T defaultValue, String defaultText,
      Function<String, T> parser, Predicate<T> check, String checkDoc, boolean internal) {
    this.key = key;
    this.doc = doc;
    this.type = type;
    this.defaultValue = defaultValue;
    this.defaultText = defaultText;
    this.parser = parser;
    this.check = check;
    this.checkDoc = checkDoc;
    this.internal = internal;
  }

  public String key() {
    return key;
  }

  public String doc() {
    return doc;
  }

  public String type() {
    return type;
  }

  public T defaultValue() {
    return defaultValue;
  }

  public String defaultText() {
    return defaultText;
  }

  /** Test-only keys are documented in their own section. */
  public boolean internal() {
    return internal;
  }

  /** Parses and validates {@code raw}; the error names the key, the value and the rule. */
  public T parse(String raw) {
    T v;
    try {
      v = parser.apply(raw.trim());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException(key + "='" + raw + "' is not a valid " + type + ": "
          + e.getMessage(), e);
    }
    if (!check.test(v)) {
      throw new IllegalArgumentException(key + "='" + raw + "': " + checkDoc);
    }
    return v;
  }
}
