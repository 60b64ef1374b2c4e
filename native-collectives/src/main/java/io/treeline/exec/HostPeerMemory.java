package io.treeline.exec;

import io.treeline.plan.Buf;
import java.nio.ByteBuffer;

/**
 * Peer memory on the host: every local rank's registered INPUT and OUTPUT as direct,
 * native-order buffers of {@link #capacity()} bytes, readable in place by the node's ranks.
 */
public interface HostPeerMemory extends LocalPeerMemory {
  /** Local {@code peer}'s (or this rank's own) registered {@code buf}; index 0 is its start. */
  ByteBuffer buffer(int peer, Buf buf);

  /** Bytes of each registered buffer. */
  long capacity();
}
