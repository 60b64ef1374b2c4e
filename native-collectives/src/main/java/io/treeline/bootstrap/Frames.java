package io.treeline.bootstrap;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;

/**
 * Length-prefixed frames for control connections (the store, the peer handshake): a 4-byte
 * type, a 4-byte length, the payload. A length above the limit is refused before anything is
 * allocated, so a stranger cannot make a rank allocate gigabytes.
 */
public final class Frames {
  /** Largest control frame: 16 MiB (an all-gather of 1024 ranks' peer info fits easily). */
  public static final int MAX_FRAME = 16 << 20;

  private Frames() {
  }

  public static void write(DataOutputStream out, int type, byte[] payload) throws IOException {
    if (payload.length > MAX_FRAME) {
      throw new IOException("frame of " + payload.length + " bytes exceeds the limit of "
          + MAX_FRAME);
    }
    out.writeInt(type);
    out.writeInt(payload.length);
    out.write(payload);
    out.flush();
  }

  /** A frame; {@code expectType} -1 accepts any type. */
  public record Frame(int type, byte[] payload) {
  }

  public static Frame read(DataInputStream in, int maxBytes) throws IOException {
    int type = in.readInt();
    int len = in.readInt();
    if (len < 0 || len > maxBytes) {
      throw new java.net.ProtocolException("refused a frame of " + len + " bytes (limit "
          + maxBytes + ")");
    }
    byte[] p = new byte[len];
    in.readFully(p);
    return new Frame(type, p);
  }
}
