package io.treeline.comm;

import io.treeline.bootstrap.Bootstrap;
import io.treeline.bootstrap.BootstrapException;
import io.treeline.bootstrap.InProcessBootstrap;
import io.treeline.conf.TreelineEnv;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.CollectiveException;
import io.treeline.exec.CollectiveTimeoutException;
import io.treeline.exec.FaultInjection;
import io.treeline.exec.HostPeerMemory;
import io.treeline.exec.NetworkLink;
import io.treeline.exec.PeerWatch;
import io.treeline.exec.PlanRunner;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Buf;
import io.treeline.plan.Plan;
import io.treeline.plan.Ring;
import io.treeline.plan.Topology;
import io.treeline.plan.TreeBroadcast;
import io.treeline.plan.TwoShot;
import io.treeline.reduce.HostReducer;
import io.treeline.transport.TransportProvider;
import io.treeline.transport.inprocess.InProcessTransport;
import io.treeline.transport.shm.ShmTransport;
import io.treeline.transport.tcp.TcpTransport;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Collectives across processes on host memory: shared-memory segments between the ranks of a
 * node (peers read each other's buffers in place), TCP between nodes, plans from
 * {@code io.treeline.plan} run by a {@link PlanRunner}.
 *
 * <p>Setup: each rank maps a segment of its own, opens a TCP listener, and all-gathers
 * {@link PeerInfo} through the {@link Bootstrap}; the ranks then agree on the {@link Topology}
 * (nodes in order of their lowest rank, ranks node-major inside it: the "topology rank" that
 * orders reduce-scatter and all-gather slices), map their node peers' segments, and each
 * deletes its segment file once all peers have mapped it.
 *
 * <p>Every collective runs on the communicator's own thread, in call order: the synchronous
 * methods wait for it, the {@code *Async} ones return a {@link Handle}. Data is copied into
 * this rank's segment and the result copied out (direct, native-order buffers; in and out may
 * be the same buffer). Allreduces and broadcasts larger than a segment run in windows.
 *
 * <p>A failure marks the communicator broken: its peers are told (the segment's abort word, an
 * ABORT frame on the TCP link every pair of ranks has from set-up on) so that they fail at
 * once, whatever they wait on (one {@link PeerWatch} per rank, polled by both transports), and
 * every later call fails with the first cause. A collective that times out carries the group's
 * hang report (who waits for whom). {@link #close} tells the peers this rank leaves after its
 * last call, and releases segments, mappings, sockets and threads, after a failure too.
 */
public final class Communicator implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger("io.treeline.comm");
  /** How long a timed-out collective waits for the peers' answers to its hang report. */
  private static final Duration REPORT_BUDGET = Duration.ofMillis(500);

  private final Bootstrap bootstrap;
  private final CommConfig config;
  private final Topology topology;
  private final int rank;
  private final int planRank;
  private final int[] planOf;
  private final HostPeerMemory memory;
  private final NetworkLink network;
  private final ByteBuffer ownInput;
  private final ByteBuffer ownOutput;
  private final ExecutorService worker;
  private final PlanRunner runner;
  private final HostReducer copier = new HostReducer();
  private final Map<String, Plan> plans = new HashMap<>();
  private volatile Throwable broken;
  private volatile boolean closed;
  private long sequence;

  private Communicator(Bootstrap bootstrap, CommConfig config, Topology topology, int[] planOf,
      HostPeerMemory memory, NetworkLink network, PeerWatch watch) {
    this.bootstrap = bootstrap;
    this.config = config;
    this.topology = topology;
    this.rank = bootstrap.rank();
    this.planOf = planOf;
    this.planRank = planOf[rank];
    this.memory = memory;
    this.network = network;
    this.ownInput = memory.buffer(planRank, Buf.INPUT);
    this.ownOutput = memory.buffer(planRank, Buf.OUTPUT);
    this.runner = new PlanRunner(memory, network, planRank, topology.maxLocalSize(), copier,
        watch);
    this.worker = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "treeline-comm-" + bootstrap.rank());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Set up a communicator over all ranks of {@code bootstrap} on the host transports: shared
   * memory inside a node ({@link ShmTransport}), TCP across nodes ({@link TcpTransport}).
   * Collective: every rank calls it.
   */
  public static Communicator create(Bootstrap bootstrap, CommConfig config) {
    String host;
    try {
      host = bindHost();
    } catch (IOException e) {
      throw new BootstrapException("rank " + bootstrap.rank() + ": cannot find this host's "
          + "address (set " + TreelineEnv.ADDR.key() + "): " + e, e);
    }
    return create(bootstrap, config, new ShmTransport(config.segmentBytes()),
        new TcpTransport((int) config.plan().chunkBytes(), config.slotsPerLane(), host));
  }

  /**
   * The address a rank's TCP link binds and publishes: {@code TREELINE_ADDR} when set;
   * {@code 127.0.0.1} when the job's store is on loopback ({@code TREELINE_MASTER_ADDR}, so a
   * one-machine job never leaves it); else the address the host name resolves to.
   */
  static String bindHost() throws IOException {
    String forced = TreelineEnv.ADDR.get();
    if (forced != null) {
      return forced;
    }
    String master = TreelineEnv.MASTER_ADDR.get();
    if (master != null && java.net.InetAddress.getByName(master).isLoopbackAddress()) {
      return "127.0.0.1";
    }
    return java.net.InetAddress.getLocalHost().getHostAddress();
  }

  /**
   * Set up a communicator over the given transports: peer memory for the ranks of a node, a
   * network link for messages between any two ranks. Each rank opens both, the ranks all-gather
   * their addresses through {@code bootstrap}, agree on the {@link Topology}, and connect.
   * Collective: every rank calls it with the same kinds of transport.
   */
  public static Communicator create(Bootstrap bootstrap, CommConfig config,
      TransportProvider<? extends HostPeerMemory> memoryProvider,
      TransportProvider<? extends NetworkLink> networkProvider) {
    int rank = bootstrap.rank();
    int n = bootstrap.size();
    Duration timeout = config.timeout();
    TransportProvider.Local local = new TransportProvider.Local(rank, n, bootstrap.secret(),
        timeout);
    TransportProvider.Pending<? extends HostPeerMemory> pendingMemory = null;
    TransportProvider.Pending<? extends NetworkLink> pendingNetwork = null;
    HostPeerMemory memory = null;
    NetworkLink network = null;
    try {
      pendingMemory = memoryProvider.open(local);
      pendingNetwork = networkProvider.open(local);
      long pid = ProcessHandle.current().pid();
      PeerInfo me = new PeerInfo(rank, bootstrap.nodeId(), pid, pendingMemory.address(),
          pendingNetwork.address());
      if (FaultInjection.ON) {
        FaultInjection.at("bootstrap", rank, 0);
      }
      byte[][] all = bootstrap.allGather(me.encode(), timeout);
      PeerInfo[] infos = new PeerInfo[n];
      String[] nodeIds = new String[n];
      for (int r = 0; r < n; r++) {
        infos[r] = PeerInfo.decode(all[r]);
        if (infos[r].rank() != r) {
          throw new BootstrapException("rank " + rank + ": the bootstrap gave rank " + r
              + "'s slot to rank " + infos[r].rank());
        }
        nodeIds[r] = infos[r].node();
      }
      RankLayout layout = RankLayout.of(nodeIds);
      Topology topo = layout.topology();
      int[] planOf = layout.planOf();
      int[] bootOf = layout.bootOf();
      long[] pids = new long[n];
      byte[][] memoryAddrs = new byte[n][];
      byte[][] networkAddrs = new byte[n][];
      for (int p = 0; p < n; p++) {
        PeerInfo info = infos[bootOf[p]];
        pids[p] = info.pid();
        memoryAddrs[p] = info.memory();
        networkAddrs[p] = info.network();
      }
      Runnable barrier = () -> bootstrap.barrier(timeout);
      // one view of the group for both transports: an abort heard on either ends waits on both
      PeerWatch watch = new PeerWatch(planOf[rank], timeout);
      memory = pendingMemory.connect(new TransportProvider.Peers(topo, planOf[rank],
          memoryAddrs, pids, barrier, timeout, watch));
      pendingMemory = null;
      network = pendingNetwork.connect(new TransportProvider.Peers(topo, planOf[rank],
          networkAddrs, pids, barrier, timeout, watch));
      pendingNetwork = null;
      return new Communicator(bootstrap, config, topo, planOf, memory, network, watch);
    } catch (IOException | RuntimeException e) {
      if (network != null) {
        network.close();
      }
      if (pendingNetwork != null) {
        pendingNetwork.close();
      }
      if (memory != null) {
        memory.close();
      }
      if (pendingMemory != null) {
        pendingMemory.close();
      }
      if (e instanceof BootstrapException b) {
        throw b;
      }
      throw new BootstrapException("rank " + rank + ": cannot set up the communicator: " + e,
          e);
    }
  }

  /**
   * Communicators for ranks that are threads of this JVM, on simulated nodes of
   * {@code ranksPerNode[i]} ranks each (node-major): the same communicator, plans and checks as
   * across processes, over in-process transports. For tests, and the benchmark's thread mode.
   * Each returned communicator is used by one thread; close all of them.
   */
  public static Communicator[] inProcess(CommConfig config, int... ranksPerNode) {
    InProcessBootstrap[] boots = InProcessBootstrap.nodes(ranksPerNode);
    int n = boots.length;
    InProcessTransport transport = new InProcessTransport(n, config.segmentBytes(),
        (int) config.plan().chunkBytes(), config.slotsPerLane(), config.timeout());
    Communicator[] comms = new Communicator[n];
    Throwable[] errors = new Throwable[n];
    Thread[] threads = new Thread[n];
    for (int r = 0; r < n; r++) {
      int rank = r;
      threads[r] = new Thread(() -> {
        try {
          comms[rank] = create(boots[rank], config, transport.memory(), transport.network());
        } catch (Throwable e) {
          errors[rank] = e;
          boots[rank].close(); // the others fail at once instead of at the timeout
        }
      }, "treeline-inprocess-setup-" + r);
      threads[r].start();
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new BootstrapException("interrupted while setting up in-process ranks", e);
      }
    }
    for (int r = 0; r < n; r++) {
      if (errors[r] != null) {
        for (Communicator c : comms) {
          if (c != null) {
            c.close();
          }
        }
        throw new BootstrapException("in-process rank " + r + " failed to set up: "
            + errors[r].getMessage(), errors[r]);
      }
    }
    return comms;
  }

  // ---- who is who ----------------------------------------------------------------------------

  /** This rank, as the bootstrap numbers it. */
  public int rank() {
    return rank;
  }

  public int size() {
    return topology.size();
  }

  /** This rank's place in node-major order: its slice of a reduce-scatter or all-gather. */
  public int topologyRank() {
    return planRank;
  }

  public int localRank() {
    return topology.localRank(planRank);
  }

  public int localSize() {
    return topology.localSize(topology.node(planRank));
  }

  public int nodeRank() {
    return topology.node(planRank);
  }

  public int nodeCount() {
    return topology.nodes();
  }

  public Topology topology() {
    return topology;
  }

  public CommConfig config() {
    return config;
  }

  /** Connections refused at this rank for a wrong secret or a bad frame. */
  public int refusedConnections() {
    return network.refusedConnections();
  }

  // ---- collectives ---------------------------------------------------------------------------

  public void allReduce(ByteBuffer in, ByteBuffer out, long count, DataType type, ReduceOp op) {
    allReduceAsync(in, out, count, type, op).await(callBound(windows(count, type)));
  }

  public Handle allReduceAsync(ByteBuffer in, ByteBuffer out, long count, DataType type,
      ReduceOp op) {
    return allReduceAsync(in, out, count, type, op, null);
  }

  /**
   * With {@code algorithm} non-null, this call uses it instead of the configured one or the
   * selector's choice (benchmarks compare algorithms on one communicator). Every rank must pass
   * the same.
   */
  public Handle allReduceAsync(ByteBuffer in, ByteBuffer out, long count, DataType type,
      ReduceOp op, Algorithm algorithm) {
    requireBuffers("allReduce", in, out, count, type);
    if (algorithm != null && !algorithm.supports(topology)) {
      throw new IllegalArgumentException(algorithm.id() + " runs inside one node; this "
          + "communicator spans " + topology.nodes() + " nodes");
    }
    return submit("allreduce", () -> windowed(in, out, count, type, (c) -> {
      Algorithm a = algorithm != null ? algorithm : algorithm(c * type.size());
      return plan("ar-" + a.id(), c, type, -1, () -> a.allReduce(topology, type, c,
          config.plan()));
    }, op));
  }

  public void broadcast(ByteBuffer in, ByteBuffer out, long count, DataType type, int root) {
    requireBuffers("broadcast", in, out, count, type);
    if (root < 0 || root >= size()) {
      throw new IllegalArgumentException("rank " + rank + ": broadcast root " + root
          + " is not a rank of this communicator (0.." + (size() - 1) + ", as rank() numbers "
          + "them)");
    }
    int r = planOf[root];
    submit("broadcast", () -> windowed(in, out, count, type, (c) -> plan("bc", c, type, r,
        () -> TreeBroadcast.broadcast(topology, type, c, r, config.plan())), ReduceOp.SUM))
        .await(callBound(windows(count, type)));
  }

  /** Rank {@link #topologyRank()} ends with its slice ({@code io.treeline.plan.Slices}) reduced. */
  public void reduceScatter(ByteBuffer in, ByteBuffer out, long count, DataType type,
      ReduceOp op) {
    requireBuffers("reduceScatter", in, out, count, type);
    requireFits("reduceScatter", count, type);
    submit("reducescatter", () -> whole(in, out, count, type, plan("rs", count, type, -1,
        () -> topology.nodes() == 1 ? TwoShot.reduceScatter(topology, type, count,
            config.plan()) : Ring.reduceScatter(topology, type, count, config.plan())), op))
        .await(callBound(1));
  }

  /** Rank {@link #topologyRank()} contributes its slice of {@code in}; all ranks get all. */
  public void allGather(ByteBuffer in, ByteBuffer out, long count, DataType type) {
    requireBuffers("allGather", in, out, count, type);
    requireFits("allGather", count, type);
    submit("allgather", () -> whole(in, out, count, type, plan("ag", count, type, -1,
        () -> Ring.allGather(topology, type, count, config.plan())), ReduceOp.SUM))
        .await(callBound(1));
  }

  /** Returns when every rank has called it. */
  public void barrier() {
    ByteBuffer b = ByteBuffer.allocateDirect(4).order(java.nio.ByteOrder.nativeOrder());
    allReduce(b, b, 1, DataType.I32, ReduceOp.SUM);
  }

  private Algorithm algorithm(long bytes) {
    return config.algorithm() != null ? config.algorithm()
        : config.selector().select(topology, bytes);
  }

  private interface PlanFor {
    Plan of(long count);
  }

  private interface Body {
    void run();
  }

  private Plan plan(String kind, long count, DataType type, int root,
      java.util.function.Supplier<Plan> make) {
    String key = kind + ':' + count + ':' + type + ':' + root;
    Plan p = plans.get(key);
    if (p == null) {
      if (plans.size() > 256) {
        plans.clear(); // a job with ever-new sizes must not grow without bound
      }
      p = make.get();
      plans.put(key, p);
    }
    return p;
  }

  /**
   * How long a synchronous call waits for its collective: the collective's own deadlines, plus
   * time for a timed-out one to gather the hang report, so that the caller gets that failure
   * (which names who is behind) and not a bare timeout of its own.
   */
  private Duration callBound(long windows) {
    return config.timeout().multipliedBy(windows).plus(REPORT_BUDGET).plusSeconds(1);
  }

  private long windowElements(DataType type) {
    return config.segmentBytes() / type.size();
  }

  private long windows(long count, DataType type) {
    return Math.max(1, (count + windowElements(type) - 1) / windowElements(type));
  }

  /**
   * Argument errors fail the call that made them, on this rank, before anything is submitted:
   * the communicator stays usable and the peers are not aborted (they wait for a correct call).
   */
  private void requireBuffers(String what, ByteBuffer in, ByteBuffer out, long count,
      DataType type) {
    if (type == null) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " needs a data type");
    }
    if (count < 0) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " of " + count
          + " elements");
    }
    requireBuffer(what, "input", in, count, type);
    requireBuffer(what, "output", out, count, type);
  }

  private void requireBuffer(String what, String which, ByteBuffer b, long count,
      DataType type) {
    if (b == null) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + ": the " + which
          + " buffer is null");
    }
    if (!b.isDirect() || b.order() != java.nio.ByteOrder.nativeOrder()) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + ": the " + which
          + " buffer must be direct and in native order (ByteBuffer.allocateDirect(n).order("
          + "ByteOrder.nativeOrder())); got " + (b.isDirect() ? "direct" : "heap") + ", "
          + b.order());
    }
    if (b.isReadOnly() && which.equals("output")) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + ": the output buffer"
          + " is read-only");
    }
    if ((long) b.capacity() < count * type.size()) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " of " + count + " x "
          + type + " needs " + count * type.size() + " bytes; the " + which + " buffer holds "
          + b.capacity());
    }
  }

  private void requireFits(String what, long count, DataType type) {
    if (count * type.size() > config.segmentBytes()) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " of " + count + " x "
          + type + " (" + count * type.size() + " bytes) exceeds the shared segment of "
          + config.segmentBytes() + " bytes; raise segmentBytes (spark.treeline.segmentBytes)");
    }
  }

  private Handle submit(String what, Body body) {
    if (closed) {
      throw new CollectiveException(rank, -1, what, "the communicator is closed", null);
    }
    Future<?> f = worker.submit(() -> {
      Throwable b = broken;
      if (b != null) {
        throw new CollectiveException(rank, -1, what, "the communicator failed earlier and "
            + "cannot run more collectives: " + b.getMessage(), b);
      }
      try {
        if (FaultInjection.ON) {
          FaultInjection.at("between", rank, sequence + 1);
        }
        body.run();
      } catch (CollectiveTimeoutException e) {
        // who waits for whom, asked before the abort below releases everyone
        CollectiveTimeoutException reported = e.withReport(network.describeWaits(
            REPORT_BUDGET));
        fail(reported);
        throw reported;
      } catch (RuntimeException | Error e) {
        fail(e);
        throw e;
      }
      return null;
    });
    return new Handle(f, rank, what);
  }

  private void fail(Throwable e) {
    if (broken == null) {
      broken = e;
      CommStats.failed();
      String reason = "rank " + rank + " failed: " + e.getMessage();
      memory.abort(reason);
      network.abort(reason);
      LOG.log(System.Logger.Level.WARNING, "rank " + rank + ": collective failed, telling the "
          + "peers: " + e.getMessage());
    }
  }

  private void windowed(ByteBuffer in, ByteBuffer out, long count, DataType type, PlanFor plans,
      ReduceOp op) {
    int es = type.size();
    long window = windowElements(type);
    for (long done = 0; done < count || (count == 0 && done == 0); done += window) {
      long c = Math.min(window, count - done);
      runOne(plans.of(c), in, done * es, out, done * es, c, type, op);
      if (count == 0) {
        break;
      }
    }
  }

  private void whole(ByteBuffer in, ByteBuffer out, long count, DataType type, Plan plan,
      ReduceOp op) {
    runOne(plan, in, 0, out, 0, count, type, op);
  }

  private void runOne(Plan plan, ByteBuffer in, long inOff, ByteBuffer out, long outOff,
      long count, DataType type, ReduceOp op) {
    if (count > 0) {
      copier.copy(type, op, in, inOff, ownInput, 0, count, false, 1);
    }
    long t0 = System.nanoTime();
    runner.run(plan, ++sequence, 0, op, config.timeout());
    CommStats.record(plan.algorithm(), plan.bytes(), System.nanoTime() - t0);
    if (count > 0) {
      copier.copy(type, op, ownOutput, 0, out, outOff, count, false, 1);
    }
  }

  // ---- shutdown ------------------------------------------------------------------------------

  /** Releases segments, mappings, sockets and threads; safe after a failure and twice. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (broken == null) {
      // a peer still waiting on this rank (its task failed outside a collective) fails now
      // instead of at its timeout; a peer that finished our last call never looks again
      String reason = "rank " + rank + " closed its communicator (its task ended)";
      memory.leave(reason);
      network.leave(reason);
    }
    network.close(); // wakes a collective blocked on the network
    worker.shutdown();
    boolean stopped;
    try {
      stopped = worker.awaitTermination(config.timeout().toMillis() + 5000,
          TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopped = false;
    }
    if (!stopped) {
      // a thread still inside a collective could touch the mappings: leave them to the GC
      LOG.log(System.Logger.Level.WARNING, "rank " + rank + ": the collective thread did not "
          + "stop; leaving its shared memory mapped");
      return;
    }
    memory.close();
  }
}
