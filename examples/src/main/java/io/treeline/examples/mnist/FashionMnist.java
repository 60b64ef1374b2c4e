package io.treeline.examples.mnist;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fashion-MNIST as Debian's {@code dataset-fashion-mnist} installs it: 60,000 training and
 * 10,000 test images of 28 x 28 unsigned bytes with labels 0..9.
 */
public record FashionMnist(byte[] trainImages, byte[] trainLabels, byte[] testImages,
    byte[] testLabels, int pixels) {
  public static final Path DEFAULT_DIR = Path.of("/usr/share/datasets/fashion-mnist");
  public static final String INSTALL = "apt-get install dataset-fashion-mnist";

  public int trainSize() {
    return trainLabels.length;
  }

  public int testSize() {
    return testLabels.length;
  }

  public static FashionMnist load(Path dir) throws IOException {
    Path[] files = {dir.resolve("train-images-idx3-ubyte.gz"),
        dir.resolve("train-labels-idx1-ubyte.gz"), dir.resolve("t10k-images-idx3-ubyte.gz"),
        dir.resolve("t10k-labels-idx1-ubyte.gz")};
    for (Path f : files) {
      if (!Files.exists(f)) {
        throw new IOException(f + " not found: Fashion-MNIST is Debian's package "
            + "dataset-fashion-mnist (as root: apt-get update && " + INSTALL
            + ", or ./treeline train --install-data), or pass --data DIR with the four IDX "
            + "files");
      }
    }
    int[] d = new int[3];
    byte[] trainImg = Idx.images(files[0], d);
    int pixels = d[1] * d[2];
    int nTrain = d[0];
    byte[] trainLab = Idx.labels(files[1]);
    byte[] testImg = Idx.images(files[2], d);
    if (d[1] * d[2] != pixels) {
      throw new IOException(files[2] + ": images are " + d[1] + "x" + d[2] + ", the training "
          + "images " + pixels + " pixels");
    }
    int nTest = d[0];
    byte[] testLab = Idx.labels(files[3]);
    if (trainLab.length != nTrain || testLab.length != nTest) {
      throw new IOException(dir + ": " + nTrain + " training images but " + trainLab.length
          + " labels, " + nTest + " test images but " + testLab.length + " labels");
    }
    for (byte[] labels : new byte[][] {trainLab, testLab}) {
      for (byte l : labels) {
        if (l < 0 || l > 9) {
          throw new IOException(dir + ": a label is " + l + ", not 0..9");
        }
      }
    }
    return new FashionMnist(trainImg, trainLab, testImg, testLab, pixels);
  }
}
