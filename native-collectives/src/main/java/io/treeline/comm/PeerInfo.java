package io.treeline.comm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * What a rank tells every other rank at setup: who it is (bootstrap rank, node, process id) and
 * where its transports are (one opaque address per transport, as its provider encoded it).
 */
record PeerInfo(int rank, String node, long pid, byte[] memory, byte[] network) {
  private static final int VERSION = 2;
  private static final int MAX_ADDRESS = 1 << 16;

  byte[] encode() {
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

  static PeerInfo decode(byte[] bytes) {
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
