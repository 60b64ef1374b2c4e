package io.treeline.examples.mnist;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IdxTest {
  @Test
  void readsTheRealFilesWhenThePackageIsInstalled() throws IOException {
    Assumptions.assumeTrue(Files.exists(FashionMnist.DEFAULT_DIR.resolve(
        "train-images-idx3-ubyte.gz")), "dataset-fashion-mnist is not installed");
    FashionMnist d = FashionMnist.load(FashionMnist.DEFAULT_DIR);
    assertEquals(60_000, d.trainSize());
    assertEquals(10_000, d.testSize());
    assertEquals(784, d.pixels());
    int[] perClass = new int[10];
    for (byte l : d.trainLabels()) {
      perClass[l]++;
    }
    assertTrue(Arrays.stream(perClass).allMatch(c -> c == 6000), Arrays.toString(perClass));
  }

  private static Path write(Path dir, String name, int magic, int[] dims, int dataBytes,
      boolean gzip) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(gzip ? new GZIPOutputStream(b) : b)) {
      d.writeInt(magic);
      for (int x : dims) {
        d.writeInt(x);
      }
      for (int i = 0; i < dataBytes; i++) {
        d.write(i % 10);
      }
    }
    Path f = dir.resolve(name);
    Files.write(f, b.toByteArray());
    return f;
  }

  @Test
  void roundTripsSmallFilesGzippedOrNot(@TempDir Path dir) throws IOException {
    int[] dims = new int[3];
    byte[] img = Idx.images(write(dir, "i.gz", Idx.IMAGES, new int[] {3, 2, 2}, 12, true), dims);
    assertEquals(12, img.length);
    assertEquals(3, dims[0]);
    byte[] lab = Idx.labels(write(dir, "l", Idx.LABELS, new int[] {5}, 5, false));
    assertEquals(4, lab[4]);
  }

  @Test
  void truncatedCorruptAndMissingFilesSayWhichFileAndWhat(@TempDir Path dir) throws Exception {
    Path truncated = write(dir, "t.gz", Idx.IMAGES, new int[] {10, 28, 28}, 100, true);
    IOException e = assertThrows(IOException.class, () -> Idx.images(truncated, new int[3]));
    assertTrue(e.getMessage().contains("t.gz") && e.getMessage().contains("truncated"),
        e.getMessage());
    Path wrong = write(dir, "w", Idx.LABELS, new int[] {1, 1, 1}, 1, false);
    e = assertThrows(IOException.class, () -> Idx.images(wrong, new int[3]));
    assertTrue(e.getMessage().contains("not an IDX images file"), e.getMessage());
    Path notGzip = dir.resolve("n.gz");
    Files.writeString(notGzip, "hello");
    e = assertThrows(IOException.class, () -> Idx.labels(notGzip));
    assertTrue(e.getMessage().contains("not a gzip file"), e.getMessage());
    byte[] real = Files.readAllBytes(write(dir, "r.gz", Idx.LABELS, new int[] {1000}, 1000,
        true));
    Path cut = dir.resolve("cut.gz");
    Files.write(cut, Arrays.copyOf(real, real.length / 2));
    e = assertThrows(IOException.class, () -> Idx.labels(cut));
    assertTrue(e.getMessage().contains("cut.gz"), e.getMessage());
    e = assertThrows(IOException.class, () -> FashionMnist.load(dir.resolve("nowhere")));
    assertTrue(e.getMessage().contains("apt-get install dataset-fashion-mnist"), e.getMessage());
  }
  /** A gzip'd IDX labels file whose deflate blocks are stored, so that a flipped byte stays
   * decodable and only the CRC at the end can tell. */
  private static byte[] storedGzip(int count) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(new GZIPOutputStream(b) {
      {
        def.setLevel(Deflater.NO_COMPRESSION);
      }
    })) {
      d.writeInt(Idx.LABELS);
      d.writeInt(count);
      for (int i = 0; i < count; i++) {
        d.write(i % 10);
      }
    }
    return b.toByteArray();
  }

  @Test
  void aGzipBodyThatFailsItsCrcIsRefused(@TempDir Path dir) throws IOException {
    byte[] good = storedGzip(1000);
    Path ok = dir.resolve("ok.gz");
    Files.write(ok, good);
    assertEquals(1000, Idx.labels(ok).length);
    byte[] bad = good.clone();
    int at = bad.length - 8 - 500; // a label byte in the middle of the stored block
    bad[at] = (byte) (bad[at] == 3 ? 4 : 3);
    Path corrupt = dir.resolve("corrupt.gz");
    Files.write(corrupt, bad);
    IOException e = assertThrows(IOException.class, () -> Idx.labels(corrupt));
    assertTrue(e.getMessage().contains("corrupt.gz") && e.getMessage().contains("corrupt gzip"),
        e.getMessage());
    byte[] badCrc = good.clone();
    badCrc[badCrc.length - 8] ^= 1; // the CRC32 of the trailer
    Path trailer = dir.resolve("trailer.gz");
    Files.write(trailer, badCrc);
    e = assertThrows(IOException.class, () -> Idx.labels(trailer));
    assertTrue(e.getMessage().contains("trailer.gz"), e.getMessage());
  }

  @Test
  void dataPastWhatTheHeaderPromisesIsRefused(@TempDir Path dir) throws IOException {
    Path longer = write(dir, "long", Idx.LABELS, new int[] {5}, 6, false);
    IOException e = assertThrows(IOException.class, () -> Idx.labels(longer));
    assertTrue(e.getMessage().contains("long") && e.getMessage().contains("more data than"),
        e.getMessage());
  }
}
