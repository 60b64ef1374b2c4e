package io.treeline.transport.shm;

import io.treeline.exec.CallDescriptor;
import io.treeline.exec.HostPeerMemory;
import io.treeline.exec.PeerWatch;
import io.treeline.plan.Buf;
import io.treeline.transport.TransportProvider;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Peer memory on the host through shared-memory segments: each rank creates a segment of its own
 * ({@link SharedSegment}), publishes its path, maps its node peers' segments, and deletes its
 * file once every peer has mapped it (the setup barrier), so that nothing is left under
 * {@code /dev/shm} whatever happens later. A rank killed before that cannot delete its file:
 * files are named with their owner's pid, and every rank deletes those of dead owners when it
 * opens and when its set-up fails ({@link Leftovers}); a shutdown hook deletes this process's
 * own file on a signal during set-up. Flags are the segments' FLAG words (VarHandle
 * release/acquire), waits go through {@link PeerFlags} (abort, process exit, deadline).
 */
public final class ShmTransport implements TransportProvider<HostPeerMemory> {
  private final long segmentBytes;

  /** @param segmentBytes bytes of each registered buffer (INPUT and OUTPUT) of a segment */
  public ShmTransport(long segmentBytes) {
    this.segmentBytes = segmentBytes;
  }

  @Override
  public Pending<HostPeerMemory> open(Local local) throws IOException {
    Path dir = SharedSegment.directory();
    Leftovers.sweep(dir);
    Path path = dir.resolve(Leftovers.PREFIX + SharedSegment.jobTag(local.secret()) + "-r"
        + local.rank() + Leftovers.PID_MARK + ProcessHandle.current().pid());
    SharedSegment own = SharedSegment.create(path, local.rank(), segmentBytes);
    Leftovers.own(path);
    return new Pending<>() {
      @Override
      public byte[] address() {
        return encode(local.rank(), path.toString());
      }

      @Override
      public HostPeerMemory connect(Peers peers) throws IOException {
        int n = peers.topology().size();
        SharedSegment[] segs = new SharedSegment[n];
        try {
          for (int p = 0; p < n; p++) {
            if (p == peers.planRank()) {
              segs[p] = own;
            } else if (peers.topology().sameNode(p, peers.planRank())) {
              DataInputStream d = new DataInputStream(new ByteArrayInputStream(
                  peers.addresses()[p]));
              int rank = d.readInt();
              segs[p] = SharedSegment.open(Path.of(d.readUTF()), rank);
            }
          }
          peers.barrier().run(); // every local peer has mapped our segment
          own.unlink();
          Leftovers.unlinked(path);
          Memory m = new Memory(peers.planRank(), own, segs, peers.pids(), peers.timeout(),
              peers.watch());
          peers.watch().addCheck(m.flags::scan);
          return m;
        } catch (IOException | RuntimeException e) {
          for (SharedSegment s : segs) {
            if (s != null && s != own) {
              s.close();
            }
          }
          // a peer killed during set-up cannot remove its file; one that is dead, we can
          Leftovers.sweep(SharedSegment.directory());
          throw e;
        }
      }

      @Override
      public void close() {
        own.close();
        Leftovers.unlinked(path);
      }
    };
  }

  private static byte[] encode(int rank, String path) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    try (DataOutputStream d = new DataOutputStream(b)) {
      d.writeInt(rank);
      d.writeUTF(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return b.toByteArray();
  }

  /** The node's segments, by plan rank (null for ranks of other nodes). */
  static final class Memory implements HostPeerMemory {
    private final SharedSegment own;
    private final SharedSegment[] segments;
    private final PeerFlags flags;
    private volatile boolean aborted;
    private long sequence;
    private CallDescriptor call;

    Memory(int rank, SharedSegment own, SharedSegment[] segments, long[] pids,
        Duration timeout, PeerWatch watch) {
      this.own = own;
      this.segments = segments;
      this.flags = new PeerFlags(rank, segments, pids, timeout, () -> aborted, watch);
    }

    @Override
    public ByteBuffer buffer(int peer, Buf buf) {
      SharedSegment s = segments[peer];
      return buf == Buf.INPUT ? s.input() : s.output();
    }

    @Override
    public long capacity() {
      return own.capacity();
    }

    @Override
    public void beginCall(long sequence, CallDescriptor call) {
      this.sequence = sequence;
      this.call = call;
      own.beginCall(sequence, call.count(), call.meta());
    }

    @Override
    public void signal(long value) {
      own.signal(value);
    }

    @Override
    public void await(int peer, long value, long deadline, String phase) {
      flags.await(peer, value, deadline, phase, sequence, call);
    }

    @Override
    public void abort(String reason) {
      aborted = true;
      own.abort(reason);
    }

    @Override
    public void leave(String reason) {
      aborted = true;
      own.leave(reason);
    }

    @Override
    public void close() {
      aborted = true;
      for (SharedSegment s : segments) {
        if (s != null) {
          s.close();
        }
      }
    }
  }
}
