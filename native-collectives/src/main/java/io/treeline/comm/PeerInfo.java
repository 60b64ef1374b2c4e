package io.treeline.comm;

import io.treeline.bootstrap.Bootstrap;
import io.treeline.bootstrap.BootstrapException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;

/**
 * What a rank tells every other rank at setup, the one versioned codec of both communicators:
 * who it is (bootstrap rank, node, process id) and where its transports are, one opaque address
 * per transport as its provider encoded it. The host communicator puts its peer memory's and its
 * network link's addresses there; the GPU path puts its device address (GPU identity, IPC handles
 * of its registered buffers, flags and events: {@code gpu.DeviceAddress}) as the peer-memory
 * address and has no network address of its own (its cross-node phase runs on a host
 * communicator).
 *
 * @param rank the bootstrap rank
 * @param node the node identity (which ranks share a host)
 * @param pid the process id
 * @param memory the peer-memory transport's address
 * @param network the network transport's address (empty when there is none)
 */
public record PeerInfo(int rank, String node, long pid, byte[] memory, byte[] network) {
  /** 3: the GPU path's info became a {@code PeerInfo} (2 was host-only). */
  private static final int VERSION = 3;
  private static final int MAX_ADDRESS = 1 << 16;

  /**
   * All-gathers {@code me} through {@code bootstrap} and decodes every rank's info, checking that
   * slot r holds rank r. Collective: every rank calls it.
   *
   * @return the infos by bootstrap rank
   */
  public static PeerInfo[] exchange(Bootstrap bootstrap, PeerInfo me, Duration timeout) {
    byte[][] all = bootstrap.allGather(me.encode(), timeout);
    PeerInfo[] infos = new PeerInfo[all.length];
    for (int r = 0; r < all.length; r++) {
      infos[r] = decode(all[r]);
      if (infos[r].rank() != r) {
        throw new BootstrapException("rank " + me.rank() + ": the bootstrap gave rank " + r
            + "'s slot to rank " + infos[r].rank());
      }
    }
    return infos;
  }

  /** The node of every rank, by bootstrap rank (for {@link RankLayout#of}). */
  public static String[] nodes(PeerInfo[] infos) {
    String[] nodes = new String[infos.length];
    for (int r = 0; r < infos.length; r++) {
      nodes[r] = infos[r].node();
    }
    return nodes;
  }

  /** The versioned bytes the peers decode. */
  public byte[] encode() {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(b)) {
      d.writeInt(VERSION);
      d.writeInt(rank);
      d.writeUTF(node);
      d.writeLong(pid);
      d.writeInt(memory.length);
      d.write(memory);
      d.writeInt(network.length);
      d.write(network);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return b.toByteArray();
  }

  /** Decodes {@link #encode()}'s bytes; a different version or a malformed one throws. */
  public static PeerInfo decode(byte[] bytes) {
    try (DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes))) {
      int version = d.readInt();
      if (version != VERSION) {
        throw new IOException("peer info version " + version + "; this Treeline reads "
            + VERSION + " (are all ranks running the same Treeline jar?)");
      }
      int rank = d.readInt();
      String node = d.readUTF();
      long pid = d.readLong();
      byte[] memory = blob(d);
      byte[] network = blob(d);
      if (d.available() > 0) {
        throw new IOException(d.available() + " trailing bytes");
      }
      return new PeerInfo(rank, node, pid, memory, network);
    } catch (IOException e) {
      throw new UncheckedIOException("malformed peer info: " + e.getMessage(), e);
    }
  }

  private static byte[] blob(DataInputStream d) throws IOException {
    int n = d.readInt();
    if (n < 0 || n > MAX_ADDRESS) {
      throw new IOException("transport address of " + n + " bytes");
    }
    return d.readNBytes(n);
  }
}
