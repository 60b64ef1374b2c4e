package io.treeline.transport.shm;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One rank's shared-memory segment: a file under {@code /dev/shm} (or {@code java.io.tmpdir}
 * where that is missing), mapped by the rank that owns it and by every other rank of its node.
 * The owner deletes the file as soon as all local peers have mapped it, so that nothing is left
 * under {@code /dev/shm} even if a process dies later; the mappings live on until unmapped.
 *
 * <pre>
 *  0       8       16      24         64      72     128     136     144   192      200      208
 *  +-------+-------+-------+----------+-------+------+-------+-------+-----+--------+--------+------+
 *  | MAGIC | cap   | rank  | reserved | FLAG  | pad  | ABORT | a.len | pad | C.SEQ  | C.COUNT| C.META
 *  +-------+-------+-------+----------+-------+------+-------+-------+-----+--------+--------+------+
 *  256                                              4096
 *  +------------------------------------------------+
 *  | abort reason (UTF-8, a.len bytes)              |
 *  +------------------------------------------------+
 *  4096                       4096 + cap                  4096 + 2 cap
 *  +--------------------------+---------------------------+
 *  | INPUT  (cap bytes)       | OUTPUT (cap bytes)        |
 *  +--------------------------+---------------------------+
 * </pre>
 *
 * FLAG is written only by the owner, with release semantics, and read by peers with acquire
 * semantics ({@link VarHandle} on the mapped buffer): a peer that sees flag value v sees every
 * byte the owner wrote to INPUT and OUTPUT before publishing v, and the call (C.SEQ, C.COUNT,
 * C.META: the sequence number and {@code CallDescriptor} of the collective it is in), which
 * peers compare with their own. ABORT, in its own cache line, is set once (after the reason) by
 * an owner whose collective failed ({@link #FAILED}), so that peers waiting on it fail at once,
 * with its reason, instead of at their timeout, or by an owner that leaves in order after its
 * last call C.SEQ ({@link #LEFT}), so that only a peer waiting on it in a later call fails.
 */
public final class SharedSegment implements AutoCloseable {
  public static final long MAGIC = 0x54524545_4C494E45L; // "TREELINE"
  public static final int MAGIC_OFFSET = 0;
  public static final int CAPACITY_OFFSET = 8;
  public static final int RANK_OFFSET = 16;
  public static final int FLAG_OFFSET = 64;
  public static final int ABORT_OFFSET = 128;
  public static final int ABORT_LENGTH_OFFSET = 136;
  public static final int CALL_SEQUENCE_OFFSET = 192;
  public static final int CALL_COUNT_OFFSET = 200;
  public static final int CALL_META_OFFSET = 208;
  public static final int ABORT_REASON_OFFSET = 256;
  public static final int ABORT_REASON_MAX = 4096 - ABORT_REASON_OFFSET;
  public static final int HEADER = 4096;
  /** ABORT values: the owner's collective failed; the owner left after its last call. */
  public static final long FAILED = 1;
  public static final long LEFT = 2;

  private static final VarHandle LONGS =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  private final Path path;
  private final boolean owner;
  private final long capacity;
  private final MappedByteBuffer map;
  private final ByteBuffer input;
  private final ByteBuffer output;
  private boolean closed;

  private SharedSegment(Path path, boolean owner, long capacity, MappedByteBuffer map) {
    this.path = path;
    this.owner = owner;
    this.capacity = capacity;
    this.map = map;
    map.order(ByteOrder.nativeOrder());
    this.input = map.slice(HEADER, (int) capacity).order(ByteOrder.nativeOrder());
    this.output = map.slice((int) (HEADER + capacity), (int) capacity)
        .order(ByteOrder.nativeOrder());
  }

  /**
   * A short tag of the job's secret for segment file names, so that the segments of jobs that
   * share a machine never collide and a leftover file names its job (not the secret itself).
   */
  public static String jobTag(byte[] secret) {
    try {
      byte[] h = java.security.MessageDigest.getInstance("SHA-256").digest(secret);
      return java.util.HexFormat.of().formatHex(h, 0, 6);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The folder segments go to: /dev/shm when it is there and writable, else java.io.tmpdir. */
  public static Path directory() {
    Path shm = Path.of("/dev/shm");
    if (Files.isDirectory(shm) && Files.isWritable(shm)) {
      return shm;
    }
    return Path.of(System.getProperty("java.io.tmpdir"));
  }

  /** Create and map a new segment with room for {@code capacity} bytes in each buffer. */
  public static SharedSegment create(Path path, int rank, long capacity) throws IOException {
    if (capacity <= 0 || HEADER + 2 * capacity > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("segment capacity must be 1 byte .. ~1 GiB per buffer, "
          + "got " + capacity);
    }
    long size = HEADER + 2 * capacity;
    try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw");
        FileChannel ch = f.getChannel()) {
      f.setLength(size);
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      m.order(ByteOrder.nativeOrder());
      m.putLong(CAPACITY_OFFSET, capacity);
      m.putLong(RANK_OFFSET, rank);
      LONGS.setRelease(m, FLAG_OFFSET, 0L);
      LONGS.setRelease(m, MAGIC_OFFSET, MAGIC); // last: a mapper that sees it sees the header
      return new SharedSegment(path, true, capacity, m);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(path);
      throw e;
    }
  }

  /** Map a peer's segment. */
  public static SharedSegment open(Path path, int expectRank) throws IOException {
    try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw");
        FileChannel ch = f.getChannel()) {
      long size = ch.size();
      MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      m.order(ByteOrder.nativeOrder());
      long magic = (long) LONGS.getAcquire(m, MAGIC_OFFSET);
      long cap = m.getLong(CAPACITY_OFFSET);
      long rank = m.getLong(RANK_OFFSET);
      if (magic != MAGIC || HEADER + 2 * cap != size || rank != expectRank) {
        unmap(m);
        throw new IOException("segment " + path + " is not rank " + expectRank
            + "'s Treeline segment (magic " + Long.toHexString(magic) + ", rank " + rank + ")");
      }
      return new SharedSegment(path, false, cap, m);
    }
  }

  public Path path() {
    return path;
  }

  public long capacity() {
    return capacity;
  }

  public ByteBuffer input() {
    return input;
  }

  public ByteBuffer output() {
    return output;
  }

  /** Owner only: publish {@code value} (release). */
  public void signal(long value) {
    LONGS.setRelease(map, FLAG_OFFSET, value);
  }

  /** The owner's last published value (acquire). */
  public long flag() {
    return (long) LONGS.getAcquire(map, FLAG_OFFSET);
  }

  /** Owner only: tell the peers that this rank's collectives failed, and why. */
  public void abort(String reason) {
    publishAbort(FAILED, reason);
  }

  /** Owner only: tell the peers that this rank leaves after its last call (C.SEQ), and why. */
  public void leave(String reason) {
    publishAbort(LEFT, reason);
  }

  private void publishAbort(long kind, String reason) {
    if ((long) LONGS.getAcquire(map, ABORT_OFFSET) != 0) {
      return; // set once: the first word stands
    }
    byte[] r = reason.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    int n = Math.min(r.length, ABORT_REASON_MAX);
    map.put(ABORT_REASON_OFFSET, r, 0, n);
    map.putLong(ABORT_LENGTH_OFFSET, n);
    LONGS.setRelease(map, ABORT_OFFSET, kind);
  }

  /** The ABORT word (acquire): 0, {@link #FAILED} or {@link #LEFT}. */
  public long abortWord() {
    return (long) LONGS.getAcquire(map, ABORT_OFFSET);
  }

  /** The owner's abort reason; call after {@link #aborted()} returned true. */
  public String abortReason() {
    int n = (int) Math.min(map.getLong(ABORT_LENGTH_OFFSET), ABORT_REASON_MAX);
    byte[] r = new byte[n];
    map.get(ABORT_REASON_OFFSET, r, 0, n);
    return new String(r, java.nio.charset.StandardCharsets.UTF_8);
  }

  /**
   * The call words' sequence while the owner rewrites them: a reader that sees it (or a
   * sequence other than the one it reads for) knows the owner has moved on and skips the check.
   */
  public static final long WRITING = Long.MIN_VALUE;

  /**
   * Owner only: publish the call it is entering; visible to peers with its next signal. A
   * seqlock: the sequence word is set to {@link #WRITING} before the count and meta change and
   * to the new sequence (release) after, so {@link #readCall} never accepts the old sequence
   * with the new call's words. (Plain puts and gets here, as before, let the JIT fold a reader's
   * second look at the sequence into its first: 2 and 8 ranks then reported a call mismatch that
   * was the peer publishing its next call, 2026-12-04.)
   */
  public void beginCall(long sequence, long count, long meta) {
    LONGS.setOpaque(map, CALL_SEQUENCE_OFFSET, WRITING);
    VarHandle.storeStoreFence();
    LONGS.setOpaque(map, CALL_COUNT_OFFSET, count);
    LONGS.setOpaque(map, CALL_META_OFFSET, meta);
    LONGS.setRelease(map, CALL_SEQUENCE_OFFSET, sequence);
  }

  /**
   * The owner's call words as one consistent snapshot, when the owner is in call {@code
   * sequence}: {@code into[0]} = count, {@code into[1]} = meta, and true; false when it is in
   * another call or rewriting the words (it has then passed call {@code sequence}'s last
   * barrier, so it made that call). Allocates nothing.
   */
  public boolean readCall(long sequence, long[] into) {
    long seq = (long) LONGS.getAcquire(map, CALL_SEQUENCE_OFFSET);
    if (seq != sequence) {
      return false;
    }
    into[0] = (long) LONGS.getOpaque(map, CALL_COUNT_OFFSET);
    into[1] = (long) LONGS.getOpaque(map, CALL_META_OFFSET);
    VarHandle.loadLoadFence();
    return (long) LONGS.getOpaque(map, CALL_SEQUENCE_OFFSET) == seq;
  }

  /** The owner's current call sequence ({@link #WRITING} while it publishes the next). */
  public long callSequence() {
    return (long) LONGS.getAcquire(map, CALL_SEQUENCE_OFFSET);
  }

  public boolean aborted() {
    return (long) LONGS.getAcquire(map, ABORT_OFFSET) != 0;
  }

  /** Owner only: remove the file; the mappings stay valid. */
  public void unlink() throws IOException {
    if (owner) {
      Files.deleteIfExists(path);
    }
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      unlink();
    } catch (IOException e) {
      // best effort: the file is the owner's, and /dev/shm is cleared at reboot
    }
    unmap(map);
  }

  private static void unmap(MappedByteBuffer m) {
    try {
      Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      ((sun.misc.Unsafe) f.get(null)).invokeCleaner(m);
    } catch (ReflectiveOperationException e) {
      // left to the garbage collector
    }
  }
}
