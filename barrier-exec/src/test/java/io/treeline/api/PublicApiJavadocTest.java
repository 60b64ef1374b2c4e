package io.treeline.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.source.tree.ClassTree;
import com.sun.source.tree.CompilationUnitTree;
import com.sun.source.tree.MethodTree;
import com.sun.source.tree.ModifiersTree;
import com.sun.source.tree.Tree;
import com.sun.source.tree.VariableTree;
import com.sun.source.util.DocTrees;
import com.sun.source.util.JavacTask;
import com.sun.source.util.TreePath;
import com.sun.source.util.TreePathScanner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.lang.model.element.Modifier;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * Every public type, constructor, method, field and enum constant of the user packages,
 * {@code io.treeline.core} (engine side) and {@code io.treeline.barrier} (Spark side), has a
 * javadoc comment. The sources are parsed with the JDK's compiler API (no classpath needed);
 * methods marked {@code @Override} inherit their documentation, as javadoc does.
 */
class PublicApiJavadocTest {
  private static final Path[] USER_PACKAGES = {
      Path.of("..", "native-collectives", "src", "main", "java", "io", "treeline", "core"),
      Path.of("src", "main", "java", "io", "treeline", "barrier")};

  @Test
  void everyPublicUserTypeAndMemberHasJavadoc() throws IOException {
    List<Path> files = new ArrayList<>();
    for (Path dir : USER_PACKAGES) {
      assertTrue(Files.isDirectory(dir), dir.toAbsolutePath() + " is missing");
      try (Stream<Path> s = Files.list(dir)) {
        s.filter(p -> p.toString().endsWith(".java")).forEach(files::add);
      }
    }
    List<String> undocumented = undocumented(files);
    assertEquals(List.of(), undocumented, undocumented.size() + " public members of the user "
        + "API have no javadoc");
  }

  /** "File: kind name" for each public declaration without a doc comment. */
  static List<String> undocumented(List<Path> files) throws IOException {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    List<String> missing = new ArrayList<>();
    try (StandardJavaFileManager fm = javac.getStandardFileManager(null, null, null)) {
      Iterable<? extends JavaFileObject> units = fm.getJavaFileObjectsFromPaths(files);
      JavacTask task = (JavacTask) javac.getTask(null, fm, null, List.of("-proc:none"), null,
          units);
      DocTrees docs = DocTrees.instance(task);
      for (CompilationUnitTree unit : task.parse()) {
        String file = Path.of(unit.getSourceFile().toUri()).getFileName().toString();
        new TreePathScanner<Void, Boolean>() {
          @Override
          public Void visitClass(ClassTree c, Boolean inInterface) {
            if (!exported(c.getModifiers(), inInterface)) {
              return null; // nothing inside a hidden type is API
            }
            check("type " + c.getSimpleName());
            boolean iface = c.getKind() == Tree.Kind.INTERFACE
                || c.getKind() == Tree.Kind.ANNOTATION_TYPE;
            for (Tree member : c.getMembers()) {
              scan(member, iface);
            }
            return null;
          }

          @Override
          public Void visitMethod(MethodTree m, Boolean inInterface) {
            boolean overrides = m.getModifiers().getAnnotations().stream().anyMatch(a ->
                a.getAnnotationType().toString().equals("Override"));
            boolean generated = m.getName().contentEquals("<init>") && isCompactOrImplicit(m);
            if (exported(m.getModifiers(), inInterface) && !overrides && !generated) {
              check("method " + m.getName() + m.getParameters().stream().map(p ->
                  p.getType().toString()).toList());
            }
            return null;
          }

          @Override
          public Void visitVariable(VariableTree v, Boolean inInterface) {
            if (exported(v.getModifiers(), inInterface) || isEnumConstant(v)) {
              check("field " + v.getName());
            }
            return null;
          }

          private boolean isEnumConstant(VariableTree v) {
            Tree parent = getCurrentPath().getParentPath().getLeaf();
            return parent.getKind() == Tree.Kind.ENUM && v.getModifiers().getFlags().isEmpty()
                && v.getType() != null && v.getType().toString().equals(
                    ((ClassTree) parent).getSimpleName().toString());
          }

          private boolean isCompactOrImplicit(MethodTree m) {
            return m.getBody() == null;
          }

          private void check(String what) {
            if (docs.getDocCommentTree(getCurrentPath()) == null) {
              missing.add(file + ": " + what);
            }
          }
        }.scan(new TreePath(unit), false);
      }
    }
    return missing;
  }

  /** Public, or a member of an interface that is not private. */
  private static boolean exported(ModifiersTree m, boolean inInterface) {
    return m.getFlags().contains(Modifier.PUBLIC)
        || (inInterface && !m.getFlags().contains(Modifier.PRIVATE));
  }
}
