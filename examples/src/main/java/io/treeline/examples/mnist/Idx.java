package io.treeline.examples.mnist;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Reads the IDX files of (Fashion-)MNIST, gzipped or not: a big-endian magic (0x0801 for
 * labels, 0x0803 for images), the dimensions, then unsigned bytes. Every error names the file
 * and what is wrong with it.
 */
public final class Idx {
  static final int LABELS = 0x0801;
  static final int IMAGES = 0x0803;

  private Idx() {
  }

  /** Images as one array of {@code count * rows * cols} bytes; {@code dims} gets count, rows, cols. */
  public static byte[] images(Path file, int[] dims) throws IOException {
    try (DataInputStream in = open(file)) {
      expectMagic(file, in, IMAGES, "images");
      int n = in.readInt();
      int rows = in.readInt();
      int cols = in.readInt();
      if (n < 0 || rows <= 0 || cols <= 0 || (long) n * rows * cols > Integer.MAX_VALUE) {
        throw new IOException(file + ": implausible image dimensions " + n + " x " + rows
            + " x " + cols);
      }
      dims[0] = n;
      dims[1] = rows;
      dims[2] = cols;
      return body(file, in, n * rows * cols);
    }
  }

  public static byte[] labels(Path file) throws IOException {
    try (DataInputStream in = open(file)) {
      expectMagic(file, in, LABELS, "labels");
      int n = in.readInt();
      if (n < 0) {
        throw new IOException(file + ": negative label count " + n);
      }
      return body(file, in, n);
    }
  }

  private static DataInputStream open(Path file) throws IOException {
    InputStream raw;
    try {
      raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
    } catch (NoSuchFileException e) {
      throw new NoSuchFileException(file.toString(), null, "not found");
    }
    if (file.getFileName().toString().endsWith(".gz")) {
      try {
        raw = new BufferedInputStream(new GZIPInputStream(raw, 1 << 16), 1 << 16);
      } catch (ZipException | EOFException e) {
        raw.close();
        throw new IOException(file + ": not a gzip file (" + e.getMessage() + ")", e);
      }
    }
    return new DataInputStream(raw);
  }

  private static void expectMagic(Path file, DataInputStream in, int want, String what)
      throws IOException {
    int magic;
    try {
      magic = in.readInt();
    } catch (EOFException e) {
      throw new IOException(file + ": empty or truncated before the IDX header", e);
    }
    if (magic != want) {
      throw new IOException(String.format("%s: not an IDX %s file (magic 0x%08x, expected "
          + "0x%08x)", file, what, magic, want));
    }
  }

  private static byte[] body(Path file, DataInputStream in, int bytes) throws IOException {
    byte[] b = new byte[bytes];
    try {
      in.readFully(b);
      // read on to the end: only there does GZIPInputStream check the CRC32 and length of
      // the trailer, so a corrupt body that still inflates is caught here
      if (in.read() != -1) {
        throw new IOException(file + ": more data than the " + bytes + " bytes the header "
            + "promises");
      }
    } catch (EOFException e) {
      throw new IOException(file + ": truncated: the header promises " + bytes
          + " bytes of data", e);
    } catch (ZipException e) {
      throw new IOException(file + ": corrupt gzip data (" + e.getMessage() + ")", e);
    }
    return b;
  }
}
