package io.treeline.gpu;

import io.treeline.kernels.IpcHandles;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The GPU path's peer-memory address, carried as {@code comm.PeerInfo}'s memory address (the
 * versioned record both communicators exchange at setup, which also says who the rank is): which
 * GPU (UUID and PCI bus id, which orders the node's ranks across PCIe switches), its
 * shared-memory segment (host flags), its registered buffers as CUDA IPC handles (64 raw bytes
 * each) and as addresses (which only a peer in the same process may use), and the IPC handles
 * of its events, {@code [parity * PHASES + phase]}.
 */
record DeviceAddress(String gpu, String busId, String segment, long input, long output,
    long flags, byte[] inputHandle, byte[] outputHandle, byte[] flagsHandle, byte[][] events) {

  byte[] encode() {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(b)) {
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

  static DeviceAddress decode(byte[] bytes) {
    try (DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes))) {
      String gpu = d.readUTF();
      String busId = d.readUTF();
      String segment = d.readUTF();
      long input = d.readLong();
      long output = d.readLong();
      long flags = d.readLong();
      byte[] ih = handle(d);
      byte[] oh = handle(d);
      byte[] fh = handle(d);
      int n = d.readInt();
      if (n < 0 || n > 1024) {
        throw new IOException(n + " event handles");
      }
      byte[][] events = new byte[n][];
      for (int i = 0; i < events.length; i++) {
        events[i] = handle(d);
      }
      if (d.available() > 0) {
        throw new IOException(d.available() + " trailing bytes");
      }
      return new DeviceAddress(gpu, busId, segment, input, output, flags, ih, oh, fh, events);
    } catch (IOException e) {
      throw new UncheckedIOException("malformed device address: " + e.getMessage(), e);
    }
  }

  private static byte[] handle(DataInputStream d) throws IOException {
    byte[] h = new byte[IpcHandles.BYTES];
    d.readFully(h);
    return h;
  }
}
