package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.bootstrap.InProcessBootstrap;
import io.treeline.bootstrap.SubsetBootstrap;
import io.treeline.core.CallMismatchException;
import io.treeline.core.CollectiveException;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.CallDescriptor;
import io.treeline.exec.HostStaging;
import io.treeline.exec.NetworkLink;
import io.treeline.exec.StagedRunner;
import io.treeline.plan.Buf;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.StagedHierarchical;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import io.treeline.testing.Elements;
import io.treeline.testing.Ranks;
import io.treeline.transport.TransportProvider;
import io.treeline.transport.shm.ShmTransport;
import io.treeline.transport.tcp.TcpTransport;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The GPU path's inter-node phase without a GPU: the staged part of {@code StagedHierarchical}
 * (its stage-outs, the chunk trees' message steps, its stage-ins) run by
 * {@link HostCommunicator#runStaged} exactly as {@code gpu.HostStage} runs it, over real TCP
 * links between simulated nodes (threads of this JVM, one communicator per local index over a
 * {@link SubsetBootstrap} of the whole group, as {@code gpu.DeviceCommunicator} sets them up).
 * The device OUTPUT is a host buffer holding each node's partial sum (what the node's
 * reduce-scatter leaves there) and the staging copies are host copies made when the chunk is
 * awaited (as an asynchronous copy lands), so a message step that ran before its chunk landed
 * would send stale bytes. Results are checked against a float64 reference on random data, and
 * what crosses the network against the plan's message steps.
 */
class StagedAcrossNodesTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(30);
  /** 1 KiB tree chunks (TCP slots) and 4 KiB stage chunks: several of each per slice. */
  private static final PlanConfig CHUNKS = PlanConfig.DEFAULT.withChunkBytes(1024);
  private static final long STAGE = 4096;

  /** The device OUTPUT and pinned STAGE of one rank, as host buffers; copies land on await. */
  static final class HostCopies implements HostStaging {
    final ByteBuffer output;
    final ByteBuffer stage;
    final int es;
    final int divisor;
    final ReduceOp op;
    final DataType type;
    final List<long[]> pending = new ArrayList<>(); // chunk -> {offset, count, at}
    int begun = -1;

    HostCopies(ByteBuffer output, long stageBytes, DataType type, ReduceOp op, int divisor) {
      this.output = output;
      this.stage = Elements.direct(stageBytes / type.size(), type);
      this.type = type;
      this.es = type.size();
      this.op = op;
      this.divisor = divisor;
    }

    @Override
    public ByteBuffer buffer() {
      return stage;
    }

    @Override
    public void begin(int chunks, long bytes) {
      assertTrue(bytes <= stage.capacity(), bytes + " staged bytes");
      begun = chunks;
    }

    @Override
    public void stageOut(int chunk, long offset, long count, long at) {
      assertEquals(pending.size(), chunk, "stage-outs in chunk order");
      pending.add(new long[] {offset, count, at});
    }

    @Override
    public void awaitStaged(int chunk, long deadline) {
      long[] c = pending.get(chunk);
      for (long i = 0; i < c[1] * es; i++) {
        stage.put((int) (c[2] + i), output.get((int) ((c[0]) * es + i)));
      }
    }

    @Override
    public void stageIn(int chunk, long offset, long count, long at, boolean finish) {
      long[] c = pending.get(chunk);
      assertEquals(c[0], offset, "stage-in " + chunk + " is the chunk staged out");
      assertEquals(c[1], count);
      for (long i = 0; i < count; i++) {
        double v = type.get(stage, (int) (at / es + i));
        if (finish && op == ReduceOp.AVG) {
          v = v / divisor;
        }
        type.put(output, (int) (offset + i), v);
      }
    }
  }

  /** TCP links that record what this rank sends and receives, in order: the real link runs. */
  static final class Recorded implements TransportProvider<NetworkLink> {
    final TcpTransport tcp = new TcpTransport((int) CHUNKS.chunkBytes(), 4, "127.0.0.1");
    final List<List<String>> log;

    Recorded(int ranks) {
      log = new ArrayList<>();
      for (int r = 0; r < ranks; r++) {
        log.add(java.util.Collections.synchronizedList(new ArrayList<>()));
      }
    }

    @Override
    public Pending<NetworkLink> open(Local local) throws IOException {
      Pending<NetworkLink> p = tcp.open(local);
      return new Pending<>() {
        @Override
        public byte[] address() {
          return p.address();
        }

        @Override
        public NetworkLink connect(Peers peers) throws IOException {
          return new Logging(p.connect(peers), log.get(peers.planRank()));
        }

        @Override
        public void close() {
          p.close();
        }
      };
    }
  }

  record Logging(NetworkLink link, List<String> log) implements NetworkLink {
    @Override
    public void beginCall(long sequence, CallDescriptor call) {
      log.clear();
      link.beginCall(sequence, call);
    }

    @Override
    public void send(int peer, int lane, ByteBuffer src, long offset, long bytes, long deadline,
        String phase) {
      log.add("send " + peer + " lane " + lane + " at " + offset + " bytes " + bytes);
      link.send(peer, lane, src, offset, bytes, deadline, phase);
    }

    @Override
    public ByteBuffer receive(int peer, int lane, long bytes, long deadline, String phase) {
      log.add("recv " + peer + " lane " + lane + " bytes " + bytes);
      return link.receive(peer, lane, bytes, deadline, phase);
    }

    @Override
    public void release(int peer, int lane, long deadline, String phase) {
      link.release(peer, lane, deadline, phase);
    }

    @Override
    public void abort(String reason) {
      link.abort(reason);
    }

    @Override
    public void leave(String reason) {
      link.leave(reason);
    }

    @Override
    public String describeWaits(Duration budget) {
      return link.describeWaits(budget);
    }

    @Override
    public void close() {
      link.close();
    }
  }

  /** What the plan says rank {@code r}'s staged part sends and receives, as the link sees it. */
  static List<String> planned(Plan plan, int r, int[] part, int[] linkPeer) {
    List<Step> steps = plan.steps(r);
    int es = plan.type().size();
    long first = Long.MAX_VALUE;
    for (int i = part[0]; i < part[1]; i++) {
      if (steps.get(i) instanceof Step.StageOut o) {
        first = Math.min(first, o.offset());
      }
    }
    List<String> want = new ArrayList<>();
    for (int i = part[0]; i < part[1]; i++) {
      Step s = steps.get(i);
      if (s instanceof Step.Send x) {
        assertEquals(Buf.STAGE, x.src());
        want.add("send " + linkPeer[x.peer()] + " lane " + x.lane() + " at "
            + (x.offset() - first) * es + " bytes " + x.count() * es);
      } else if (s instanceof Step.RecvReduce x) {
        assertEquals(Buf.STAGE, x.acc());
        want.add("recv " + linkPeer[x.peer()] + " lane " + x.lane() + " bytes "
            + x.count() * es);
      } else if (s instanceof Step.RecvCopy x) {
        assertEquals(Buf.STAGE, x.dst());
        want.add("recv " + linkPeer[x.peer()] + " lane " + x.lane() + " bytes "
            + x.count() * es);
      }
    }
    return want;
  }

  /**
   * {@code nodes} x {@code gpus} ranks; each call {@code (type, op, count)} of {@code calls}
   * on every rank (rank {@code odd} calls with one element more when it is not -1). Returns
   * each rank's failure.
   */
  private static List<Throwable> run(int nodes, int gpus, Object[][] calls, int odd) {
    int[] perNode = new int[nodes];
    java.util.Arrays.fill(perNode, gpus);
    InProcessBootstrap[] boots = InProcessBootstrap.nodes(perNode);
    Topology topo = Topology.uniform(nodes, gpus);
    Recorded[] links = new Recorded[gpus];
    for (int l = 0; l < gpus; l++) {
      links[l] = new Recorded(nodes);
    }
    CommConfig config = CommConfig.DEFAULT.withTimeout(TIMEOUT).withSegmentBytes(1 << 16)
        .withPlan(CHUNKS);
    return Ranks.runAll(nodes * gpus, 120_000, b -> {
      int node = b / gpus;
      int local = b % gpus;
      int[] members = new int[nodes];
      for (int k = 0; k < nodes; k++) {
        members[k] = k * gpus + local;
      }
      try (HostCommunicator cross = HostCommunicator.create(new SubsetBootstrap(boots[b],
          members), config, new ShmTransport(config.segmentBytes()), links[local])) {
        int r = topo.rank(node, local);
        for (int c = 0; c < calls.length; c++) {
          DataType type = (DataType) calls[c][0];
          ReduceOp op = (ReduceOp) calls[c][1];
          long count = (Long) calls[c][2] + (b == odd ? 1 : 0);
          Plan plan = StagedHierarchical.allReduce(topo, type, count, CHUNKS, STAGE);
          // node k's partial sums, the same on every rank of node k and known to all
          double[][] partial = new double[nodes][];
          for (int k = 0; k < nodes; k++) {
            partial[k] = Elements.random(new Random(31L * c + k), count, type, op);
          }
          ByteBuffer output = Elements.direct(count, type);
          for (int i = 0; i < count; i++) {
            type.put(output, i, partial[node][i]);
          }
          int[] part = StagedRunner.stagedPart(plan.steps(r));
          int[] linkPeer = new int[topo.size()];
          java.util.Arrays.fill(linkPeer, -1);
          for (int k = 0; k < nodes; k++) {
            linkPeer[topo.rank(k, local)] = cross.topologyRankOf(k);
          }
          HostCopies stage = new HostCopies(output, count * type.size() + 64, type, op,
              topo.size());
          if (part[0] < part[1]) {
            cross.runStaged(plan, r, part[0], part[1], linkPeer, stage, op,
                System.nanoTime() + TIMEOUT.toNanos());
            assertEquals(planned(plan, r, part, linkPeer),
                links[local].log.get(cross.topologyRank()), "rank " + r + " call " + c
                + ": what crossed the network is not the plan's message steps");
          }
          long lo = io.treeline.plan.Slices.lo(count, gpus, local, CHUNKS.alignElements(
              type.size()));
          long n = io.treeline.plan.Slices.size(count, gpus, local, CHUNKS.alignElements(
              type.size()));
          ReduceOp refOp = op == ReduceOp.AVG ? ReduceOp.SUM : op;
          for (int i = (int) lo; i < lo + n; i++) {
            double want = Elements.reference(partial, i, type, refOp);
            double tol = Elements.tolerance(partial, i, type, refOp);
            if (op == ReduceOp.AVG) {
              want /= topo.size();
              tol = tol / topo.size() + Math.abs(want) * 0x1p-7;
            }
            double got = type.get(output, i);
            assertTrue(Math.abs(got - want) <= tol, "rank " + r + " call " + c + " " + type
                + " " + op + " n=" + count + " element " + i + ": " + got + ", want " + want
                + " +- " + tol);
          }
        }
      }
    });
  }

  private static void ok(List<Throwable> errors) {
    for (int r = 0; r < errors.size(); r++) {
      if (errors.get(r) != null) {
        throw new AssertionError("rank " + r + " failed: " + errors.get(r), errors.get(r));
      }
    }
  }

  @Test
  void oddSizesAcrossTwoToFiveSimulatedNodesMatchTheFloat64Reference() {
    List<Object[]> calls = new ArrayList<>();
    for (long n : new long[] {0, 1, 2, 13, 1021, 40_009}) {
      calls.add(new Object[] {DataType.F32, ReduceOp.SUM, n});
    }
    calls.add(new Object[] {DataType.F64, ReduceOp.AVG, 4099L});
    calls.add(new Object[] {DataType.BF16, ReduceOp.AVG, 12_289L});
    calls.add(new Object[] {DataType.F32, ReduceOp.MAX, 3001L});
    calls.add(new Object[] {DataType.I32, ReduceOp.SUM, 7919L});
    Object[][] all = calls.toArray(new Object[0][]);
    ok(run(2, 1, all, -1));
    ok(run(3, 2, all, -1));
    ok(run(5, 3, all, -1));
  }

  @Test
  void aRankOfAnotherNodeCallingWithAnotherCountFailsNamingBothCalls() {
    Object[][] calls = {{DataType.F32, ReduceOp.SUM, 20_011L}};
    List<Throwable> errors = run(2, 2, calls, 3); // rank 3: node 1, local index 1
    assertEquals(null, errors.get(0), "local index 0 is not part of the mismatch");
    assertEquals(null, errors.get(2), "local index 0 is not part of the mismatch");
    boolean named = false;
    for (int b : new int[] {1, 3}) {
      Throwable e = errors.get(b);
      assertTrue(e instanceof CollectiveException, "rank " + b + ": " + e);
      named |= e instanceof CallMismatchException && e.getMessage().contains("20011")
          && e.getMessage().contains("20012")
          && e.getMessage().contains(StagedHierarchical.NAME + "/network");
    }
    assertTrue(named, "no rank named both calls and the phase: " + errors);
  }
}
