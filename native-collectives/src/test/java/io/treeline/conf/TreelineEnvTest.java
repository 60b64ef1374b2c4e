package io.treeline.conf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Every TREELINE_* variable the code or the launcher mentions is declared in TreelineEnv. */
class TreelineEnvTest {
  private static final Pattern VAR = Pattern.compile("TREELINE_[A-Z][A-Z_]*[A-Z]");

  @Test
  void everyEnvironmentVariableInTheSourcesIsDeclaredOnce() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    Set<String> used = new TreeSet<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : files.filter(p -> p.toString().contains("/src/main/")
          && p.toString().endsWith(".java")).collect(Collectors.toList())) {
        collect(Files.readString(f), used);
      }
    }
    collect(Files.readString(root.resolve("treeline")), used);
    Set<String> declared = Stream.of(TreelineEnv.values()).map(TreelineEnv::key)
        .collect(Collectors.toCollection(TreeSet::new));
    assertTrue(used.size() >= 5, "found " + used + " under " + root);
    used.removeAll(declared);
    assertEquals(Set.of(), used, "used but not declared in TreelineEnv");
    assertEquals(declared.size(), TreelineEnv.values().length);
  }

  private static void collect(String text, Set<String> into) {
    Matcher m = VAR.matcher(text);
    while (m.find()) {
      into.add(m.group());
    }
  }
}
