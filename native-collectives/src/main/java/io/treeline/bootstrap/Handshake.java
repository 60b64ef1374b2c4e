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
  private static final SecureRandom RANDOM = new SecureRandom();

  private Handshake() {
  }

  /** Bytes of the acceptor's challenge. */
  public static final int NONCE = 32;
  /** Bytes of the connector's answer: its rank, then the HMAC. */
  public static final int ANSWER = 4 + 32;
  /** Bytes of the acceptor's verdict (1: admitted, 0: refused). */
  public static final int VERDICT = 4;
  /**
   * How long an acceptor gives a connection to prove the secret. Ranks of a job answer in
   * milliseconds; a stranger that connects and says nothing is dropped at this deadline, so it
   * holds a slot of the acceptor ({@link SecureAcceptor}) for no longer.
   */
  public static final java.time.Duration DEADLINE = java.time.Duration.ofSeconds(5);

  /** A fresh random challenge. */
  public static byte[] nonce() {
    byte[] nonce = new byte[NONCE];
    RANDOM.nextBytes(nonce);
    return nonce;
  }

  /**
   * The rank an {@link #ANSWER} to {@code nonce} proves, or -1 when it does not prove the
   * secret. Constant time in the proof.
   */
  public static int verify(byte[] secret, String purpose, byte[] nonce,
      java.nio.ByteBuffer answer) {
    int rank = answer.getInt(0);
    byte[] proof = new byte[32];
    answer.get(4, proof);
    return MessageDigest.isEqual(proof, mac(secret, purpose, nonce, rank)) ? rank : -1;
  }

  /** The connector's {@link #ANSWER} to {@code nonce}: its rank and the proof, ready to write. */
  public static java.nio.ByteBuffer answer(byte[] secret, String purpose, byte[] nonce,
      int rank) {
    return java.nio.ByteBuffer.allocate(ANSWER).putInt(rank).put(mac(secret, purpose, nonce,
        rank)).flip();
  }

  /** The exception a connector throws when the acceptor's verdict is a refusal. */
  public static IOException refusedBy(String purpose, int rank) {
    return new IOException("the peer refused rank " + rank + "'s proof of the job secret ("
        + purpose + "): the ranks were started with different secrets");
  }

  /** Connector side: proves the secret for {@code rank}, or throws if the acceptor refused. */
  public static void connect(DataInputStream in, DataOutputStream out, byte[] secret,
      String purpose, int rank) throws IOException {
    byte[] nonce = new byte[NONCE];
    in.readFully(nonce);
    out.write(answer(secret, purpose, nonce, rank).array());
    out.flush();
    if (in.readInt() != 1) {
      throw refusedBy(purpose, rank);
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
