package io.treeline.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The package map of native-collectives (ARCHITECTURE.md), as rules a change cannot quietly
 * break. Layers from the bottom: {@code core} (types and the user interface), {@code reduce}
 * (host arithmetic),
 * {@code plan} (pure plans), {@code exec} (the plan runner and the transport SPI it runs over),
 * {@code transport.*} (implementations of that SPI), {@code bootstrap}, {@code conf} (declared
 * settings), {@code comm} (the public communicator), {@code gpu} (GPU orchestration above it).
 */
class PackageRulesTest {
  private static JavaClasses classes;

  @BeforeAll
  static void load() {
    classes = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages("io.treeline");
  }

  @Test
  void topLevelPackagesHaveNoCycles() {
    slices().matching("io.treeline.(*)..").should().beFreeOfCycles().check(classes);
  }

  @Test
  void transportsKnowOnlyTheSpiAndTheLayersBelowIt() {
    noClasses().that().resideInAPackage("io.treeline.transport..").should().dependOnClassesThat()
        .resideInAnyPackage("io.treeline.comm..", "io.treeline.gpu..", "io.treeline.conf..",
            "io.treeline.launch..", "io.treeline.topology..")
        .because("a transport plugs in below the communicator (issue 13: transport -> comm was "
            + "a cycle)")
        .check(classes);
  }

  @Test
  void transportsDoNotKnowEachOther() {
    for (String t : new String[] {"shm", "tcp", "inprocess"}) {
      noClasses().that().resideInAPackage("io.treeline.transport." + t + "..").should()
          .dependOnClassesThat().resideInAnyPackage(otherTransports(t)).check(classes);
    }
  }

  private static String[] otherTransports(String t) {
    return java.util.stream.Stream.of("shm", "tcp", "inprocess").filter(x -> !x.equals(t))
        .map(x -> "io.treeline.transport." + x + "..").toArray(String[]::new);
  }

  @Test
  void thePlanRunnerKnowsNoTransport() {
    noClasses().that().resideInAPackage("io.treeline.exec..").should().dependOnClassesThat()
        .resideInAnyPackage("io.treeline.transport..", "io.treeline.comm..", "io.treeline.gpu..",
            "io.treeline.bootstrap..", "io.treeline.conf..")
        .check(classes);
  }

  @Test
  void plansArePureData() {
    classes().that().resideInAPackage("io.treeline.plan..").should().onlyDependOnClassesThat()
        .resideInAnyPackage("io.treeline.plan..", "io.treeline.core..", "java..",
            "com.fasterxml.jackson..")
        .because("plans are data, separate from the transports that run them (Jackson only "
            + "renders them: PlanPrinter's --json)")
        .check(classes);
  }

  @Test
  void coreAndReducersStandAlone() {
    classes().that().resideInAPackage("io.treeline.core..").should().onlyDependOnClassesThat()
        .resideInAnyPackage("io.treeline.core..", "java..").check(classes);
    classes().that().resideInAPackage("io.treeline.reduce..").should().onlyDependOnClassesThat()
        .resideInAnyPackage("io.treeline.reduce..", "io.treeline.core..", "java..", "sun.misc..",
            "jdk.incubator.vector..")
        .check(classes);
  }

  @Test
  void whatAUserCallsOrCatchesLivesInCore() {
    classes().that().areAssignableTo(io.treeline.core.CollectiveException.class).should()
        .resideInAPackage("io.treeline.core..")
        .because("a user catches a collective's failures without importing internals (issue 17)")
        .check(classes);
    classes().that().areAssignableTo(io.treeline.core.Communicator.class).and().areInterfaces()
        .should().resideInAPackage("io.treeline.core..")
        .because("the user interface is one type in core; implementations live in comm")
        .check(classes);
    classes().that().areAssignableTo(io.treeline.core.DeviceCommunicator.class).and()
        .areInterfaces().should().resideInAPackage("io.treeline.core..")
        .because("the GPU path's user interface is one type in core; its implementation lives "
            + "in gpu")
        .check(classes);
    classes().that().areAssignableTo(io.treeline.core.DeviceCommunicator.class).and()
        .areNotInterfaces().should().resideInAPackage("io.treeline.gpu..")
        .because("one implementation of the device interface, above comm")
        .check(classes);
  }

  @Test
  void configurationIsDeclaredBelowWhatItConfigures() {
    noClasses().that().resideInAPackage("io.treeline.conf..").should().dependOnClassesThat()
        .resideInAnyPackage("io.treeline.comm..", "io.treeline.gpu..", "io.treeline.transport..",
            "io.treeline.exec..")
        .because("settings are declared once and read by the layers above (RapidsConf style)")
        .check(classes);
  }

  @Test
  void nothingBelowTheGpuPackageKnowsIt() {
    noClasses().that().resideOutsideOfPackage("io.treeline.gpu..").should()
        .dependOnClassesThat().resideInAPackage("io.treeline.gpu..").check(classes);
  }

  @Test
  void onlyTheGpuPackageTouchesCuda() {
    noClasses().that().resideOutsideOfPackages("io.treeline.gpu..", "io.treeline.topology..",
            "io.treeline.kernels..")
        .should().dependOnClassesThat().resideInAnyPackage("jcuda..", "io.treeline.kernels..")
        .because("the host path must load and run without JCuda's natives")
        .check(classes);
  }
}
