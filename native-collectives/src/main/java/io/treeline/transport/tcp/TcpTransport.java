package io.treeline.transport.tcp;

import io.treeline.exec.NetworkLink;
import io.treeline.transport.TransportProvider;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;

/**
 * Messages between ranks over TCP ({@link PeerLinks}): {@link #open} binds a listener on an
 * ephemeral port of this host's address and publishes host and port; {@link Pending#connect}
 * links every pair of ranks before it returns. The communicator says which address
 * ({@code HostCommunicator.bindHost}).
 */
public final class TcpTransport implements TransportProvider<NetworkLink> {
  private final int slotBytes;
  private final int slotsPerLane;
  private final String host;

  /**
   * @param slotBytes the largest message (a plan's chunk)
   * @param slotsPerLane receive slots (credits) per lane and peer
   * @param host the address to bind and publish
   */
  public TcpTransport(int slotBytes, int slotsPerLane, String host) {
    this.slotBytes = slotBytes;
    this.slotsPerLane = slotsPerLane;
    this.host = host;
  }

  @Override
  public Pending<NetworkLink> open(Local local) throws IOException {
    String bind = host;
    ServerSocketChannel listener = ServerSocketChannel.open();
    try {
      listener.bind(new InetSocketAddress(InetAddress.getByName(bind), 0), 1024);
    } catch (IOException | RuntimeException e) {
      listener.close();
      throw new IOException("rank " + local.rank() + ": cannot listen on " + bind + ": " + e, e);
    }
    int port = ((InetSocketAddress) listener.getLocalAddress()).getPort();
    return new Pending<>() {
      @Override
      public byte[] address() {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        try (DataOutputStream d = new DataOutputStream(b)) {
          d.writeUTF(bind);
          d.writeInt(port);
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
        return b.toByteArray();
      }

      @Override
      public NetworkLink connect(Peers peers) throws IOException {
        InetSocketAddress[] addrs = new InetSocketAddress[peers.addresses().length];
        for (int p = 0; p < addrs.length; p++) {
          DataInputStream d = new DataInputStream(new ByteArrayInputStream(
              peers.addresses()[p]));
          addrs[p] = new InetSocketAddress(d.readUTF(), d.readInt());
        }
        PeerLinks links = new PeerLinks(peers.planRank(), local.secret(), listener, addrs,
            slotBytes, slotsPerLane, peers.timeout(), peers.watch());
        try {
          // every pair linked before set-up returns: a failure reaches every rank at once
          links.connect(System.nanoTime() + peers.timeout().toNanos());
          return links;
        } catch (RuntimeException e) {
          links.close();
          throw e;
        }
      }

      @Override
      public void close() {
        try {
          listener.close();
        } catch (IOException ignored) {
          // closing anyway
        }
      }
    };
  }
}
