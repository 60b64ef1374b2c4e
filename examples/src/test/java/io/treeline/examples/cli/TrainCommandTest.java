package io.treeline.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.examples.mnist.FashionMnist;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TrainCommandTest {
  @Test
  void trainsInAnEmbeddedSparkBarrierStageAndWritesCurves(@TempDir Path dir) {
    Assumptions.assumeTrue(Files.exists(FashionMnist.DEFAULT_DIR.resolve(
        "train-images-idx3-ubyte.gz")), "dataset-fashion-mnist is not installed");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Treeline.run(new String[] {"train", "--ranks", "2", "--epochs", "2", "--limit",
        "3200", "--hidden", "64,32", "--out", dir.toString()},
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String o = out.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, o + err);
    assertTrue(o.contains("epoch  2/2"), o);
    assertTrue(o.contains("replicas identical on all 2 ranks"), o);
    assertTrue(Files.exists(dir.resolve("train.png")));
    assertTrue(Files.exists(dir.resolve("train.svg")));
  }

  @Test
  void aMissingDatasetSaysHowToInstallIt(@TempDir Path dir) throws Exception {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Treeline.run(new String[] {"train", "--data", dir.toString()},
        new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String e = err.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, e);
    assertTrue(e.contains("apt-get install dataset-fashion-mnist"), e);
    assertTrue(e.contains("--install-data"), e);
  }

  @Test
  void gpuInsistsAndSaysWhyWhenThereIsNone() {
    String why = io.treeline.examples.gpu.GpuTrainer.unavailable();
    Assumptions.assumeTrue(why != null, "this machine has a GPU");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Treeline.run(new String[] {"train", "--gpu", "--epochs", "1"},
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    String e = err.toString(StandardCharsets.UTF_8);
    assertEquals(1, code, e);
    assertEquals("treeline train: no GPU to train on: " + why + "\n", e);
    assertEquals("", out.toString(StandardCharsets.UTF_8));
    // without --gpu the same machine trains on the CPU: --no-overlap is refused as a GPU option
    err.reset();
    code = Treeline.run(new String[] {"train", "--no-overlap"},
        new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code, err.toString(StandardCharsets.UTF_8));
    assertTrue(err.toString(StandardCharsets.UTF_8).contains("there is no GPU here (" + why),
        err.toString(StandardCharsets.UTF_8));
  }
}
