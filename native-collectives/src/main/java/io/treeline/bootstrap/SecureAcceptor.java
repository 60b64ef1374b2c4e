package io.treeline.bootstrap;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Accepts connections on a listening port and proves the job secret ({@link Handshake}) on each
 * without ever blocking: one thread, one selector, every pending connection a small state
 * machine (send the challenge, read the answer, send the verdict). A connection that has not
 * proven the secret by its deadline ({@link Handshake#DEADLINE}) is dropped, and at most
 * {@code maxPending} connections wait at once (the oldest is dropped for a new one: a real peer
 * answers in milliseconds, so only strangers are ever old). So idle, slow, garbage or
 * wrong-secret connections, however many, never delay the job's own ranks; this is the
 * pre-authentication denial of service of issue 16 closed.
 *
 * <p>An admitted connection is handed to {@code admit} with the rank it proved, deregistered
 * from this selector and still non-blocking; {@code admit} may refuse it by throwing.
 */
public final class SecureAcceptor implements AutoCloseable {
  /** Where an admitted connection goes. */
  public interface Admit {
    void admit(int rank, SocketChannel channel) throws IOException;
  }

  private static final System.Logger LOG = System.getLogger("io.treeline.bootstrap");
  private static final int LOGGED_REFUSALS = 8;

  private final String name;
  private final ServerSocketChannel listener;
  private final byte[] secret;
  private final String purpose;
  private final Admit admit;
  private final long deadlineNanos;
  private final int maxPending;
  private final Selector selector;
  private final Thread thread;
  private final ArrayDeque<Pending> pending = new ArrayDeque<>();
  private final java.util.List<Pending> ready = new java.util.ArrayList<>();
  private final AtomicInteger refused = new AtomicInteger();
  private volatile boolean closed;

  /**
   * @param name who listens, for the thread's name and the log ("rank 3", "store")
   * @param listener a bound listening channel; this acceptor owns it from here on
   */
  public SecureAcceptor(String name, ServerSocketChannel listener, byte[] secret, String purpose,
      Duration deadline, int maxPending, Admit admit) throws IOException {
    this.name = name;
    this.listener = listener;
    this.secret = secret.clone();
    this.purpose = purpose;
    this.admit = admit;
    this.deadlineNanos = deadline.toNanos();
    this.maxPending = maxPending;
    this.selector = Selector.open();
    listener.configureBlocking(false);
    listener.register(selector, SelectionKey.OP_ACCEPT);
    this.thread = new Thread(this::loop, "treeline-acceptor-" + name.replace(' ', '-'));
    thread.setDaemon(true);
    thread.start();
  }

  /** Connections dropped: wrong secret, garbage, too slow, or pushed out by newer ones. */
  public int refused() {
    return refused.get();
  }

  /** Connections still proving the secret (at most {@code maxPending}). */
  public int pending() {
    synchronized (pending) {
      return pending.size();
    }
  }

  private void loop() {
    try {
      while (!closed) {
        long now = System.nanoTime();
        long wait = 200;
        synchronized (pending) {
          Pending oldest = pending.peekFirst();
          if (oldest != null) {
            wait = Math.max(1, Math.min(wait, (oldest.deadline - now) / 1_000_000 + 1));
          }
        }
        selector.select(wait);
        Iterator<SelectionKey> it = selector.selectedKeys().iterator();
        while (it.hasNext()) {
          SelectionKey k = it.next();
          it.remove();
          if (!k.isValid()) {
            continue;
          }
          if (k.channel() == listener) {
            acceptAll();
          } else {
            Pending p = (Pending) k.attachment();
            try {
              step(p);
            } catch (RuntimeException e) { // a cancelled key: one connection, not the acceptor
              drop(p, "failed: " + e);
            }
          }
        }
        admitReady();
        expire(System.nanoTime());
      }
    } catch (IOException | RuntimeException e) {
      if (!closed) {
        LOG.log(System.Logger.Level.ERROR, name + ": the acceptor failed", e);
      }
    } finally {
      synchronized (pending) {
        for (Pending p : pending) {
          closeQuietly(p.channel);
        }
        pending.clear();
      }
    }
  }

  private void acceptAll() throws IOException {
    SocketChannel ch;
    while ((ch = listener.accept()) != null) {
      Pending evicted = null;
      Pending p;
      try {
        ch.configureBlocking(false);
        ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
        p = new Pending(ch, System.nanoTime() + deadlineNanos);
        p.key = ch.register(selector, SelectionKey.OP_WRITE, p);
      } catch (IOException e) {
        closeQuietly(ch);
        continue;
      }
      synchronized (pending) {
        if (pending.size() >= maxPending) {
          evicted = pending.pollFirst();
        }
        pending.addLast(p);
      }
      if (evicted != null) {
        drop(evicted, "pushed out by a newer connection (" + maxPending + " may wait at once)");
      }
    }
  }

  private void step(Pending p) {
    try {
      if (p.out.hasRemaining()) {
        p.channel.write(p.out);
        if (p.out.hasRemaining()) {
          return;
        }
        if (p.rank != Integer.MIN_VALUE) { // the verdict is out: hand over after this turn
          synchronized (pending) {
            pending.remove(p);
          }
          p.key.cancel();
          ready.add(p);
          return;
        }
        p.key.interestOps(SelectionKey.OP_READ);
        return;
      }
      if (p.channel.read(p.in) < 0) {
        drop(p, "closed before it proved the secret");
        return;
      }
      if (p.in.hasRemaining()) {
        return;
      }
      int rank = Handshake.verify(secret, purpose, p.nonce, p.in);
      if (rank < 0) {
        p.out = ByteBuffer.allocate(Handshake.VERDICT).putInt(0).flip();
        p.channel.write(p.out); // best effort: tell an honest misconfigured rank why
        drop(p, "did not prove the job secret (" + purpose + ", claimed rank "
            + p.in.getInt(0) + ")");
        return;
      }
      p.rank = rank;
      p.out = ByteBuffer.allocate(Handshake.VERDICT).putInt(1).flip();
      p.key.interestOps(SelectionKey.OP_WRITE);
      step(p);
    } catch (IOException e) {
      drop(p, "broke during the handshake: " + BootstrapException.describe(e));
    }
  }

  /** Hands over the connections that proved the secret this turn. */
  private void admitReady() throws IOException {
    if (ready.isEmpty()) {
      return;
    }
    selector.selectNow(); // completes the deregistrations: the new owner may go blocking
    selector.selectedKeys().clear();
    for (Pending p : ready) {
      try {
        admit.admit(p.rank, p.channel);
      } catch (IOException | RuntimeException e) {
        refused.incrementAndGet();
        log(name + " refused a connection from " + remote(p.channel) + " that proved rank "
            + p.rank + ": " + BootstrapException.describe(e));
        closeQuietly(p.channel);
      }
    }
    ready.clear();
  }

  private void expire(long now) {
    while (true) {
      Pending p;
      synchronized (pending) {
        p = pending.peekFirst();
        if (p == null || now - p.deadline < 0) {
          return;
        }
      }
      drop(p, "did not prove the job secret within " + deadlineNanos / 1_000_000 + " ms");
    }
  }

  private void drop(Pending p, String why) {
    synchronized (pending) {
      pending.remove(p);
    }
    refused.incrementAndGet();
    log(name + " dropped a connection from " + remote(p.channel) + ": it " + why);
    if (p.key != null) {
      p.key.cancel();
    }
    closeQuietly(p.channel);
  }

  private void log(String message) {
    // the first refusals say what happens; a flood is counted, not logged line by line
    int n = refused.get();
    LOG.log(n <= LOGGED_REFUSALS ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
        message + (n == LOGGED_REFUSALS ? " (further refusals are logged at DEBUG)" : ""));
  }

  private static String remote(SocketChannel ch) {
    try {
      return String.valueOf(ch.getRemoteAddress());
    } catch (IOException e) {
      return "?";
    }
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  /** Stops accepting; closes the listener and every connection still proving itself. */
  @Override
  public void close() {
    closed = true;
    closeQuietly(listener);
    selector.wakeup();
    try {
      thread.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    closeQuietly(selector);
  }

  private static final class Pending {
    final SocketChannel channel;
    final long deadline;
    final byte[] nonce = Handshake.nonce();
    final ByteBuffer in = ByteBuffer.allocate(Handshake.ANSWER);
    ByteBuffer out = ByteBuffer.wrap(nonce);
    SelectionKey key;
    int rank = Integer.MIN_VALUE;

    Pending(SocketChannel channel, long deadline) {
      this.channel = channel;
      this.deadline = deadline;
    }
  }
}
