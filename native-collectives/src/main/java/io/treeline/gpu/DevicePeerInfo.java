package io.treeline.gpu;

import io.treeline.kernels.IpcHandles;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * What a rank of the GPU path tells the others at setup: who it is, which GPU (UUID and PCI
 * bus id, which orders the node's ranks across PCIe switches), its
 * shared-memory segment (host flags), its registered buffers as CUDA IPC handles (64 raw bytes
 * each) and as addresses (which only a peer in the same process may use), and the IPC handles
 * of its events, {@code [parity * PHASES + phase]}.
 */
record DevicePeerInfo(int rank, String node, long pid, String gpu, String busId, String segment,
    long input, long output, long flags, byte[] inputHandle, byte[] outputHandle,
    byte[] flagsHandle, byte[][] events) {
  private static final int VERSION = 2;

  byte[] encode() {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(b)) {
      d.writeInt(VERSION);
      d.writeInt(rank);
      d.writeUTF(node);
      d.writeLong(pid);
      d.writeUTF(gpu);
      d.writeUTF(busId);
      d.writeUTF(segment);
      d.writeLong(input);
      d.writeLong(output);
      d.writeLong(flags);
      d.write(inputHandle);
      d.write(outputHandle);
      d.write(flagsHandle);
      d.writeInt(events.length);
      for (byte[] e : events) {
        d.write(e);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return b.toByteArray();
  }

  static DevicePeerInfo decode(byte[] bytes) {
    try (DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes))) {
      int version = d.readInt();
      if (version != VERSION) {
        throw new IOException("device peer info version " + version + "; this Treeline reads "
            + VERSION + " (are all ranks running the same Treeline jar?)");
      }
      int rank = d.readInt();
      String node = d.readUTF();
      long pid = d.readLong();
      String gpu = d.readUTF();
      String busId = d.readUTF();
      String segment = d.readUTF();
      long input = d.readLong();
      long output = d.readLong();
      long flags = d.readLong();
      byte[] ih = handle(d);
      byte[] oh = handle(d);
      byte[] fh = handle(d);
      byte[][] events = new byte[d.readInt()][];
      for (int i = 0; i < events.length; i++) {
        events[i] = handle(d);
      }
      return new DevicePeerInfo(rank, node, pid, gpu, busId, segment, input, output, flags, ih,
          oh, fh, events);
    } catch (IOException e) {
      throw new UncheckedIOException("malformed device peer info: " + e.getMessage(), e);
    }
  }

  private static byte[] handle(DataInputStream d) throws IOException {
    byte[] h = new byte[IpcHandles.BYTES];
    d.readFully(h);
    return h;
  }
}
