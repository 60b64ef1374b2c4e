package io.treeline.kernels;

/**
 * The 2-D FP32 tensor maps the TMA GEMM kernels of {@code gemm_sm90_tma.cuh} load their operands
 * through: a row-major {@code rows x cols} matrix with leading dimension {@code ld} floats, boxes
 * of {@link #BOX_COLS} columns by {@code boxRows} rows, 128-byte swizzle, zeros outside the
 * matrix. A map only describes memory (address, extents, stride), so maps are cached by those
 * values: a trainer's products reuse the same buffers every step, and after the first step a
 * GEMM encodes nothing and allocates nothing ({@link #CAPACITY} entries, the oldest replaced).
 * One instance per {@link TrainingKernels} (one per rank thread).
 *
 * <p>The encoder is {@code cuTensorMapEncodeTiled} of the driver through
 * {@code jdk.incubator.foreign} ({@link ForeignTensorMapEncoder}); {@link #absent()} says why it
 * is not reachable where it is not (the module not added, native access not enabled, no driver),
 * and then {@link TrainingKernels} keeps the cp.async kernels.
 */
final class TensorMaps {
  /** Bytes of a CUtensorMap (CU_TENSOR_MAP_NUM_QWORDS = 16). */
  static final int BYTES = 128;
  /** Columns of every box: 32 floats, one 128-byte swizzle span. */
  static final int BOX_COLS = 32;
  /** Cached maps. */
  static final int CAPACITY = 64;

  /** Encodes one map into {@code out}; returns the CUresult. */
  interface Encoder {
    int encode(long address, int rows, int cols, int ld, int boxRows, byte[] out);
  }

  private static final Object LOCK = new Object();
  private static Encoder shared;
  private static String sharedAbsent;

  private final Encoder encoder;
  private final long[] addresses = new long[CAPACITY];
  private final int[] keys = new int[4 * CAPACITY];
  private final byte[][] maps = new byte[CAPACITY][];
  private final byte[] scratch = new byte[BYTES];
  private int size;
  private int next;

  TensorMaps(Encoder encoder) {
    this.encoder = encoder;
  }

  /**
   * The process's encoder, bound on first use (after {@code cuInit}: it looks for the driver
   * library the process mapped), or null; {@link #absent()} then says why.
   */
  static Encoder encoder() {
    synchronized (LOCK) {
      if (shared == null && sharedAbsent == null) {
        try {
          if (ModuleLayer.boot().findModule("jdk.incubator.foreign").isEmpty()) {
            sharedAbsent = "the JVM runs without jdk.incubator.foreign (start it with "
                + "--add-modules=jdk.incubator.foreign --enable-native-access=ALL-UNNAMED)";
          } else {
            // by name: the class links against the incubator module, absent without the flag
            shared = (Encoder) Class.forName("io.treeline.kernels.ForeignTensorMapEncoder")
                .getDeclaredConstructor().newInstance();
          }
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
          Throwable cause = e.getCause() != null ? e.getCause() : e;
          sharedAbsent = cause instanceof IllegalCallerException
              ? "native access is not enabled (start the JVM with "
                  + "--enable-native-access=ALL-UNNAMED): " + cause.getMessage()
              : "cuTensorMapEncodeTiled is not reachable: " + cause;
        }
      }
      return shared;
    }
  }

  /** Why {@link #encoder()} is null, or null where it is not (or has not been asked for). */
  static String absent() {
    synchronized (LOCK) {
      return sharedAbsent;
    }
  }

  /**
   * The map of a {@code rows x cols} matrix at {@code address} (leading dimension {@code ld}
   * floats, 16-byte aligned, a multiple of 4), boxes of 32 x {@code boxRows}; from the cache
   * where it was encoded before. Throws with the driver's error code where the driver refuses.
   */
  byte[] map(long address, int rows, int cols, int ld, int boxRows) {
    for (int i = 0; i < size; i++) {
      int q = 4 * i;
      if (addresses[i] == address && keys[q] == rows && keys[q + 1] == cols && keys[q + 2] == ld
          && keys[q + 3] == boxRows) {
        return maps[i];
      }
    }
    int rc = encoder.encode(address, rows, cols, ld, boxRows, scratch);
    if (rc != 0) {
      throw new IllegalStateException("cuTensorMapEncodeTiled: CUDA error " + rc + " for a "
          + rows + " x " + cols + " FP32 matrix at 0x" + Long.toHexString(address)
          + " (leading dimension " + ld + "), box " + BOX_COLS + " x " + boxRows);
    }
    int slot = next;
    byte[] m = maps[slot] != null ? maps[slot] : new byte[BYTES];
    System.arraycopy(scratch, 0, m, 0, BYTES);
    maps[slot] = m;
    addresses[slot] = address;
    keys[4 * slot] = rows;
    keys[4 * slot + 1] = cols;
    keys[4 * slot + 2] = ld;
    keys[4 * slot + 3] = boxRows;
    next = (slot + 1) % CAPACITY;
    size = Math.max(size, slot + 1);
    return m;
  }

  /** Maps encoded so far and still cached. */
  int size() {
    return size;
  }
}
