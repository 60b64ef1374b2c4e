package io.treeline.exec;

import io.treeline.plan.Buf;
import java.nio.ByteBuffer;

/**
 * What a {@link PlanRunner} needs from the machinery below it, for one rank. Every blocking
 * method takes an absolute deadline ({@link System#nanoTime()} based) and throws a
 * {@link CollectiveException} when it passes. Implementations: threads in one JVM
 * ({@code InProcessGroup}); shared memory and TCP (host transports); CUDA IPC (GPU path).
 */
public interface RankTransport {
  int rank();

  /** Copy {@code bytes} bytes of {@code src} from {@code offset} to {@code peer} on {@code lane}. */
  void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
      String phase);

  /**
   * The next message from {@code peer} on {@code lane}, which must be {@code bytes} long; its
   * bytes start at index 0 of the returned buffer and stay valid until {@link #release}.
   */
  ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase);

  /** Hand the slot of the last {@link #receive} from {@code peer} on {@code lane} back. */
  void release(int peer, int lane);

  /**
   * The collective about to run: {@code sequence} and its {@link CallDescriptor}. Transports
   * carry them with the call's first flag and every message, and fail on a peer whose call
   * differs, so that ranks making different calls fail with a message instead of hanging.
   */
  default void beginCall(long sequence, CallDescriptor call) {
  }

  /** Publish {@code value} in this rank's flag, with release semantics. Values only grow. */
  void signal(long value);

  /** Block until local {@code peer}'s flag is at least {@code value} (acquire). */
  void await(int peer, long value, long deadline, String phase);

  /** A local peer's buffer of the current collective, readable in place. */
  ByteBuffer peerBuffer(int peer, Buf buf);
}
