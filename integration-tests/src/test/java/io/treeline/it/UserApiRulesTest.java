package io.treeline.it;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.simpleNameStartingWith;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import io.treeline.examples.mnist.Trainer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Code written as a user writes it needs only the user packages: {@code io.treeline.core}
 * (Communicator, DataType, ReduceOp, Slice, Handle, the exceptions) and
 * {@code io.treeline.barrier} (Treeline, GradientAggregator, BarrierJobs). That code is the
 * examples' training job ({@code io.treeline.examples.mnist}), the application jar the
 * spark-submit tests build ({@code io.treeline.it.app}), the README example and the Scala one.
 */
class UserApiRulesTest {
  private static final DescribedPredicate<JavaClass> USER_CODE =
      resideInAnyPackage("io.treeline.examples.mnist..", "io.treeline.it.app..")
          .or(simpleNameStartingWith("ReadmeExampleTest"))
          .or(simpleNameStartingWith("ScalaApiTest"))
          .as("user-style code");

  @Test
  void userCodeImportsOnlyTheCoreAndBarrierPackages() {
    // the examples' classes and these tests' only, not the whole classpath's packages
    JavaClasses classes = new ClassFileImporter().importUrls(List.of(
        Trainer.class.getProtectionDomain().getCodeSource().getLocation(),
        UserApiRulesTest.class.getProtectionDomain().getCodeSource().getLocation()));
    noClasses().that(USER_CODE).should().dependOnClassesThat(resideInAPackage("io.treeline..")
            .and(not(resideInAnyPackage("io.treeline.core..", "io.treeline.barrier..",
                "io.treeline.examples.mnist..", "io.treeline.it.."))))
        .because("a user needs no internals (issue 17): io.treeline.core on the engine side, "
            + "io.treeline.barrier on the Spark side")
        .check(classes);
  }

  /**
   * The GPU trainer ({@code GpuTrainer} and its nested classes: the training loop, its buckets
   * and the Spark task's call) is written as a GPU user writes it: the device communicator and
   * gradient aggregator through {@code io.treeline.core}, its own kernels ({@code
   * io.treeline.kernels}, which stand for a user's CUDA code), no engine internals. The
   * launchers that create a communicator outside Spark ({@code GpuTrainMain}) are not user code.
   */
  @Test
  void gpuTrainingCodeUsesTheDeviceInterfaceOnly() {
    JavaClasses classes = new ClassFileImporter().importUrls(List.of(
        Trainer.class.getProtectionDomain().getCodeSource().getLocation()));
    noClasses().that(simpleNameStartingWith("GpuTrainer")
            .and(resideInAPackage("io.treeline.examples.gpu")))
        .should().dependOnClassesThat(resideInAPackage("io.treeline..")
            .and(not(resideInAnyPackage("io.treeline.core..", "io.treeline.barrier..",
                "io.treeline.kernels..", "io.treeline.examples.."))))
        .because("a GPU user needs no internals: core.DeviceCommunicator and "
            + "core.DeviceGradientAggregator (issue 13, issue 17)")
        .check(classes);
  }
}
