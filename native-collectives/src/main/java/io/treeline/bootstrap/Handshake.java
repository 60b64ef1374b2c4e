package io.treeline.bootstrap;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Challenge-response proof of the job secret, done on every connection (store or peer) before
 * any data is accepted: the acceptor sends a random 32-byte nonce, the connector answers
 * {@code HMAC-SHA256(secret, purpose || nonce || rank)} and its rank; the secret itself never
 * crosses the wire.
 */
public final class Handshake {
  private static final int NONCE = 32;
  private static final SecureRandom RANDOM = new SecureRandom();

  private Handshake() {
  }

  /** Acceptor side: returns the connector's proven rank, or throws. */
  public static int accept(DataInputStream in, DataOutputStream out, byte[] secret,
      String purpose) throws IOException {
    byte[] nonce = new byte[NONCE];
    RANDOM.nextBytes(nonce);
    out.write(nonce);
    out.flush();
    int rank = in.readInt();
    byte[] proof = new byte[32];
    in.readFully(proof);
    if (!MessageDigest.isEqual(proof, mac(secret, purpose, nonce, rank))) {
      out.writeInt(0);
      out.flush();
      throw new IOException("connection claiming rank " + rank + " did not prove the job secret"
          + " (" + purpose + "); refused");
    }
    out.writeInt(1);
    out.flush();
    return rank;
  }

  /** Connector side: proves the secret for {@code rank}, or throws if the acceptor refused. */
  public static void connect(DataInputStream in, DataOutputStream out, byte[] secret,
      String purpose, int rank) throws IOException {
    byte[] nonce = new byte[NONCE];
    in.readFully(nonce);
    out.writeInt(rank);
    out.write(mac(secret, purpose, nonce, rank));
    out.flush();
    if (in.readInt() != 1) {
      throw new IOException("the peer refused rank " + rank + "'s proof of the job secret ("
          + purpose + "): the ranks were started with different secrets");
    }
  }

  private static byte[] mac(byte[] secret, String purpose, byte[] nonce, int rank) {
    try {
      Mac m = Mac.getInstance("HmacSHA256");
      m.init(new SecretKeySpec(secret, "HmacSHA256"));
      m.update(purpose.getBytes(StandardCharsets.UTF_8));
      m.update(nonce);
      m.update(new byte[] {(byte) (rank >>> 24), (byte) (rank >>> 16), (byte) (rank >>> 8),
          (byte) rank});
      return m.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("HmacSHA256 unavailable", e);
    }
  }
}
