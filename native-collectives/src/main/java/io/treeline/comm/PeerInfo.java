package io.treeline.comm;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/** What a rank tells every other rank at setup: who and where it is. */
record PeerInfo(int rank, String node, String host, int port, long pid, String segment) {
  byte[] encode() {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(b)) {
      d.writeInt(1); // version
      d.writeInt(rank);
      d.writeUTF(node);
      d.writeUTF(host);
      d.writeInt(port);
      d.writeLong(pid);
      d.writeUTF(segment);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return b.toByteArray();
  }

  static PeerInfo decode(byte[] bytes) {
    try (DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes))) {
      int version = d.readInt();
      if (version != 1) {
        throw new IOException("peer info version " + version + "; this Treeline reads 1 "
            + "(are all ranks running the same Treeline jar?)");
      }
      return new PeerInfo(d.readInt(), d.readUTF(), d.readUTF(), d.readInt(), d.readLong(),
          d.readUTF());
    } catch (IOException e) {
      throw new UncheckedIOException("malformed peer info: " + e.getMessage(), e);
    }
  }
}
