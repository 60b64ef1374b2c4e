package io.treeline.comm;

import io.treeline.bootstrap.Bootstrap;
import io.treeline.bootstrap.BootstrapException;
import io.treeline.bootstrap.InProcessBootstrap;
import io.treeline.conf.TreelineEnv;
import io.treeline.core.CollectiveTimeoutException;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.Handle;
import io.treeline.core.ReduceOp;
import io.treeline.core.Slice;
import io.treeline.core.Tuning;
import io.treeline.exec.HostPeerMemory;
import io.treeline.exec.HostStaging;
import io.treeline.exec.FaultInjection;
import io.treeline.exec.NetworkLink;
import io.treeline.exec.PeerWatch;
import io.treeline.exec.PlanRunner;
import io.treeline.exec.ReduceThreads;
import io.treeline.exec.StagedRunner;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Buf;
import io.treeline.plan.OneShot;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Ring;
import io.treeline.plan.Slices;
import io.treeline.plan.Topology;
import io.treeline.plan.TreeBroadcast;
import io.treeline.plan.TwoShot;
import io.treeline.reduce.KernelWarmUp;
import io.treeline.reduce.Reducer;
import io.treeline.transport.TransportProvider;
import io.treeline.transport.inprocess.InProcessTransport;
import io.treeline.transport.shm.ShmTransport;
import io.treeline.transport.tcp.TcpTransport;
import java.io.IOException;
import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
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
 * <p>The implementation of the user interface {@link Communicator} (its javadoc is the
 * contract). Every collective runs on the communicator's own thread, in call order: the
 * synchronous methods wait for it, the {@code *Async} ones return a {@link Handle}. Data is
 * copied into this rank's segment and the result copied out (direct ByteBuffers through the
 * host reducer's copy, arrays and typed buffers through {@link TypedViews}; in and out may be
 * the same). The array and typed-buffer forms are the adapter {@link TypedForms}, which checks
 * their arguments and hands views to the checked collectives here. Messages larger than a segment run in windows: allreduces and broadcasts in
 * consecutive pieces, reduce-scatters and all-gathers in a piece of every rank's slice at a
 * time ({@code bySlices}).
 *
 * <p>A failure marks the communicator broken: its peers are told (the segment's abort word, an
 * ABORT frame on the TCP link every pair of ranks has from set-up on) so that they fail at
 * once, whatever they wait on (one {@link PeerWatch} per rank, polled by both transports), and
 * every later call fails with the first cause. A collective that times out carries the group's
 * hang report (who waits for whom). {@link #close} tells the peers this rank leaves after its
 * last call, and releases segments, mappings, sockets and threads, after a failure too.
 */
public final class HostCommunicator extends TypedForms implements Communicator {
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
  /** The GPU path's staged plans across nodes, on this communicator's network link. */
  private final StagedRunner staged;
  /** The configured plan knobs, two-shot pipelined in chunks (issue 15). */
  private final PlanConfig planConfig;
  private final Reducer copier = Reducer.create();
  /** Asynchronous collectives submitted and not finished; blocking ones run inline at 0. */
  private final java.util.concurrent.atomic.AtomicInteger queued =
      new java.util.concurrent.atomic.AtomicInteger();
  /** Blocking collectives running on their caller's thread now (0 or 1). */
  private final java.util.concurrent.atomic.AtomicInteger inline =
      new java.util.concurrent.atomic.AtomicInteger();
  private final PlanCache<Plan> plans = new PlanCache<>();
  private final CallState state;
  private long sequence;
  private TypedViews views;

  private HostCommunicator(Bootstrap bootstrap, CommConfig config, Topology topology, int[] planOf,
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
    int local = topology.localSize(topology.node(planRank));
    int here = Math.max(local, network.ranksOnThisHost());
    int cores = Runtime.getRuntime().availableProcessors();
    this.directOutput = directPath(Tuning.DIRECT_OUTPUT, here, cores);
    this.directInput = directPath(Tuning.DIRECT_INPUT, here, cores);
    this.runner = new PlanRunner(memory, network, planRank, topology.maxLocalSize(), copier,
        watch, ReduceThreads.forNode(local));
    this.staged = new StagedRunner(network, copier, planRank, watch);
    this.planConfig = config.plan().peerChunkBytes() > 0 ? config.plan()
        : config.plan().withPeerChunkBytes(PlanConfig.hostPeerChunkBytes(local));
    this.state = new CallState(rank, rank, "collective", reason -> {
      CommStats.failed();
      memory.abort(reason);
      network.abort(reason);
    });
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
  public static HostCommunicator create(Bootstrap bootstrap, CommConfig config) {
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
  public static HostCommunicator create(Bootstrap bootstrap, CommConfig config,
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
      PeerInfo[] infos = PeerInfo.exchange(bootstrap, me, timeout);
      RankLayout layout = RankLayout.of(PeerInfo.nodes(infos));
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
      // the reducer's Vector API kernels compiled before a rank first needs them (once a JVM;
      // across nodes most ranks first reduce a network message at 16-64 KiB), where the host's
      // ranks (simulated nodes too) leave cores to spare, and waited for before the first
      // collective
      KernelWarmUp.start(Math.max(topo.localSize(topo.node(planOf[rank])),
          network.ranksOnThisHost()));
      HostCommunicator comm = new HostCommunicator(bootstrap, config, topo, planOf, memory,
          network, watch);
      // a warm-up still running when the collectives start took their cores: 8 ranks on 16
      // cores had 8 B at p99 49-209 us with it against 5-6 without (2026-12-07); bounded, so a
      // busy machine's compile queue delays set-up by KernelWarmUp.WAIT at most
      KernelWarmUp.await(KernelWarmUp.WAIT);
      return comm;
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
  public static HostCommunicator[] inProcess(CommConfig config, int... ranksPerNode) {
    return inProcess(config, InProcessBootstrap.nodes(ranksPerNode));
  }

  /** {@link #inProcess(CommConfig, int...)} over given bootstraps (any rank-to-node map). */
  static HostCommunicator[] inProcess(CommConfig config, InProcessBootstrap[] boots) {
    int n = boots.length;
    InProcessTransport transport = new InProcessTransport(n, config.segmentBytes(),
        (int) config.plan().chunkBytes(), config.slotsPerLane(), config.timeout());
    HostCommunicator[] comms = new HostCommunicator[n];
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
        for (HostCommunicator c : comms) {
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
  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return topology.size();
  }

  /** This rank's place in node-major order: its slice of a reduce-scatter or all-gather. */
  @Override
  public int topologyRank() {
    return planRank;
  }

  @Override
  public int localRank() {
    return topology.localRank(planRank);
  }

  @Override
  public int localSize() {
    return topology.localSize(topology.node(planRank));
  }

  @Override
  public int nodeRank() {
    return topology.node(planRank);
  }

  @Override
  public int nodeCount() {
    return topology.nodes();
  }

  @Override
  public Duration timeout() {
    return config.timeout();
  }

  /** The plans' {@code Slices} with this communicator's alignment, for rank {@code r}. */
  @Override
  public Slice slice(long count, DataType type, int r) {
    if (type == null) {
      throw new IllegalArgumentException("rank " + rank + ": slice needs a data type");
    }
    if (count < 0) {
      throw new IllegalArgumentException("rank " + rank + ": slice of " + count + " elements");
    }
    requireRank("slice", r);
    int align = config.plan().alignElements(type.size());
    int p = planOf[r];
    return new Slice(Slices.lo(count, size(), p, align), Slices.hi(count, size(), p, align));
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

  // ---- collectives on direct ByteBuffers -----------------------------------------------------

  @Override
  public void allReduce(ByteBuffer in, ByteBuffer out, long count, DataType type, ReduceOp op) {
    allReduce(in, out, count, type, op, null);
  }

  /** Blocking allreduce with {@code algorithm} forced (null: the configured or selected one). */
  public void allReduce(ByteBuffer in, ByteBuffer out, long count, DataType type, ReduceOp op,
      Algorithm algorithm) {
    requireBuffers("allReduce", in, out, count, type);
    allReduceNow(in, out, count, type, op, algorithm);
  }

  @Override
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
    return allReduceChecked(in, out, count, type, op, algorithm);
  }

  @Override
  public void broadcast(ByteBuffer in, ByteBuffer out, long count, DataType type, int root) {
    requireBuffers("broadcast", in, out, count, type);
    broadcastChecked(in, out, count, type, root);
  }

  /** Rank {@link #topologyRank()} ends with its {@link #slice} reduced. */
  @Override
  public void reduceScatter(ByteBuffer in, ByteBuffer out, long count, DataType type,
      ReduceOp op) {
    requireBuffers("reduceScatter", in, out, count, type);
    reduceScatterChecked(in, out, count, type, op);
  }

  /** Rank {@link #topologyRank()} contributes its {@link #slice} of {@code in}; all get all. */
  @Override
  public void allGather(ByteBuffer in, ByteBuffer out, long count, DataType type) {
    requireBuffers("allGather", in, out, count, type);
    allGatherChecked(in, out, count, type);
  }

  /** Returns when every rank has called it. */
  @Override
  public void barrier() {
    ByteBuffer b = ByteBuffer.allocateDirect(4).order(java.nio.ByteOrder.nativeOrder());
    allReduce(b, b, 1, DataType.I32, ReduceOp.SUM);
  }

  // ---- the collectives, arguments checked; in and out are views indexed from element 0 ------

  @Override
  Handle allReduceChecked(Buffer in, Buffer out, long count, DataType type, ReduceOp op,
      Algorithm algorithm) {
    requireOp("allReduce", op);
    requireAlgorithm(algorithm);
    return submit("allreduce", windows(count, type), allReduceBody(in, out, count, type, op,
        algorithm));
  }

  /** The blocking allreduce: on the caller's thread unless asynchronous calls are queued. */
  @Override
  void allReduceNow(Buffer in, Buffer out, long count, DataType type, ReduceOp op,
      Algorithm algorithm) {
    requireOp("allReduce", op);
    requireAlgorithm(algorithm);
    long windows = windows(count, type);
    if (windows == 1 && queued.get() == 0) {
      allReduceInline(in, out, null, count, type, op, algorithm);
      return;
    }
    runSync("allreduce", windows, allReduceBody(in, out, count, type, op, algorithm));
  }

  /**
   * {@link #runSync} and {@link #runBody} for an allreduce that fits one window, written out so
   * that the small-message path allocates nothing (no body or plan-lookup lambdas, no key): of
   * the caller's buffers {@code in} and {@code out}, or in place in the registered window
   * {@code w} when it is non-null.
   */
  private void allReduceInline(Buffer in, Buffer out, Window w, long count, DataType type,
      ReduceOp op, Algorithm algorithm) {
    state.requireOpen("allreduce");
    inline.incrementAndGet();
    try {
      state.requireOpen("allreduce"); // close() may have looked at inline before the increment
      state.requireHealthy("allreduce");
      try {
        if (FaultInjection.ON) {
          FaultInjection.at("between", rank, sequence + 1);
        }
        if (w != null) {
          allReduceWindow(w, count, type, op);
        } else {
          runOne(allReducePlan(algorithm, count, type), in, 0, out, 0, count, type, op);
        }
      } catch (RuntimeException | Error e) {
        throw failed(e);
      }
    } finally {
      inline.decrementAndGet();
    }
  }

  /**
   * The last {@link #RECENT} allreduce plans made, by call shape (replaced in turn): a loop
   * over a few sizes neither selects nor builds a key again (the plan cache's key allocates).
   */
  private static final int RECENT = 16;
  private final Plan[] recentPlans = new Plan[RECENT];
  private final Algorithm[] recentForced = new Algorithm[RECENT];
  private final boolean[] recentReleased = new boolean[RECENT];
  private int nextRecent;

  /**
   * The allreduce plan for a call (copied in and out) of {@code c} elements: {@code forced} or
   * the configured or selected algorithm; the one-shot one with a deferred release, since
   * {@link #copyIn} waits for it ({@link PlanRunner#awaitRelease}).
   */
  private Plan allReducePlan(Algorithm forced, long c, DataType type) {
    return allReducePlan(forced, c, type, true);
  }

  /** {@code mayRelease}: one-shot may leave its last barrier to the next call's copy in. */
  private Plan allReducePlan(Algorithm forced, long c, DataType type, boolean mayRelease) {
    for (int i = 0; i < RECENT; i++) {
      Plan p = recentPlans[i];
      if (p != null && p.count() == c && p.type() == type && recentForced[i] == forced
          && recentReleased[i] == mayRelease) {
        return p;
      }
    }
    Algorithm a = forced != null ? forced : algorithm(c * type.size());
    Plan p = a == Algorithm.ONESHOT && mayRelease
        ? plan("ar-oneshot-released", c, type, -1, () -> OneShot.allReduceReleased(topology, type,
            c, planConfig))
        : plan("ar-" + a.id(), c, type, -1, () -> a.allReduce(topology, type, c, planConfig));
    recentPlans[nextRecent] = p;
    recentForced[nextRecent] = forced;
    recentReleased[nextRecent] = mayRelease;
    nextRecent = (nextRecent + 1) % RECENT;
    return p;
  }

  private void requireAlgorithm(Algorithm algorithm) {
    if (algorithm != null && !algorithm.supports(topology)) {
      throw new IllegalArgumentException("rank " + rank + ": " + algorithm.id() + " runs inside "
          + "one node; this communicator spans " + topology.nodes() + " nodes");
    }
  }

  private Body allReduceBody(Buffer in, Buffer out, long count, DataType type, ReduceOp op,
      Algorithm algorithm) {
    return () -> windowed(in, out, count, type, (c) -> allReducePlan(algorithm, c, type), op);
  }

  @Override
  void broadcastChecked(Buffer in, Buffer out, long count, DataType type, int root) {
    requireRank("broadcast root", root);
    int r = planOf[root];
    runSync("broadcast", windows(count, type), () -> windowed(in, out, count, type, (c) -> plan(
        "bc", c, type, r, () -> TreeBroadcast.broadcast(topology, type, c, r, config.plan())),
        ReduceOp.SUM));
  }

  @Override
  void reduceScatterChecked(Buffer in, Buffer out, long count, DataType type,
      ReduceOp op) {
    requireOp("reduceScatter", op);
    if (count <= windowElements(type)) {
      runSync("reducescatter", 1, () -> whole(in, out, count, type, reduceScatterPlan(count,
          type), op));
    } else {
      runSync("reducescatter", sliceWindows("reduceScatter", count, type), () -> bySlices(in,
          out, count, type, op, true));
    }
  }

  @Override
  void allGatherChecked(Buffer in, Buffer out, long count, DataType type) {
    if (count <= windowElements(type)) {
      runSync("allgather", 1, () -> whole(in, out, count, type, allGatherPlan(count, type),
          ReduceOp.SUM));
    } else {
      runSync("allgather", sliceWindows("allGather", count, type), () -> bySlices(in, out, count,
          type, ReduceOp.SUM, false));
    }
  }

  private Plan reduceScatterPlan(long count, DataType type) {
    return plan("rs", count, type, -1, () -> topology.nodes() == 1 ? TwoShot.reduceScatter(
        topology, type, count, config.plan()) : Ring.reduceScatter(topology, type, count,
        config.plan()));
  }

  private Plan allGatherPlan(long count, DataType type) {
    return plan("ag", count, type, -1, () -> Ring.allGather(topology, type, count,
        config.plan()));
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
    return p != null ? p : plans.put(key, make.get());
  }

  private long windowElements(DataType type) {
    return ordinaryBytes() / type.size();
  }

  // ---- registered windows (GradientAggregator's buckets) -------------------------------------

  /** Windows are 4 KiB-aligned; ordinary calls keep at least this much of the segment. */
  private static final long WINDOW_ALIGN = 4096;

  /** Bytes at the top of the segment held by windows. */
  private long reservedBytes;

  private long ordinaryBytes() {
    return config.segmentBytes() - reservedBytes;
  }

  private long ordinaryMinimum() {
    return Math.max(Math.min(1L << 20, config.segmentBytes()), config.segmentBytes() / 8);
  }

  /** The largest window {@link #reserveWindow} can still give. */
  public long windowBytesLeft() {
    long room = ordinaryBytes() - ordinaryMinimum();
    return Math.max(0, room - room % WINDOW_ALIGN);
  }

  /**
   * Reserve {@code bytes} of registered memory at the top of the segment (see {@link Window}).
   * Every rank must make the same reservations in the same order, with no collective in flight.
   *
   * @throws IllegalArgumentException when more than {@link #windowBytesLeft()} is asked
   */
  public synchronized Window reserveWindow(long bytes) {
    long size = (bytes + WINDOW_ALIGN - 1) / WINDOW_ALIGN * WINDOW_ALIGN;
    if (bytes < 1 || size > windowBytesLeft()) {
      throw new IllegalArgumentException("rank " + rank + ": a window of " + bytes + " bytes "
          + "does not fit: " + windowBytesLeft() + " bytes of the " + config.segmentBytes()
          + "-byte segment are left for windows; raise segmentBytes "
          + "(spark.treeline.segmentBytes)");
    }
    reservedBytes += size;
    return new Window(this, config.segmentBytes() - reservedBytes, size, ownInput, ownOutput);
  }

  /** Give back the most recently reserved window (windows are released in reverse order). */
  public synchronized void releaseWindow(Window w) {
    if (w.owner() != this || w.base() != config.segmentBytes() - reservedBytes) {
      throw new IllegalArgumentException("rank " + rank + ": release windows of this "
          + "communicator, the last reserved first");
    }
    reservedBytes -= w.bytes();
  }

  /**
   * Allreduce of the first {@code count} elements of {@code w.input()} into {@code
   * w.output()}, in place in the registered memory: no copy in or out. Every rank passes its
   * own window of the same reservation.
   */
  public Handle allReduceAsync(Window w, long count, DataType type, ReduceOp op) {
    requireWindowCall(w, count, type, op);
    return submit("allreduce", 1, () -> allReduceWindow(w, count, type, op));
  }

  /**
   * {@link #allReduceAsync(Window, long, DataType, ReduceOp)}, blocking: on the caller's thread
   * unless asynchronous calls are queued (as {@link #allReduce(ByteBuffer, ByteBuffer, long,
   * DataType, ReduceOp)}), so a small call costs no thread hand-off; allocates nothing once the
   * size's plan is made.
   */
  public void allReduce(Window w, long count, DataType type, ReduceOp op) {
    requireWindowCall(w, count, type, op);
    if (queued.get() > 0) {
      allReduceAsync(w, count, type, op).await();
      return;
    }
    allReduceInline(null, null, w, count, type, op, null);
  }

  private void requireWindowCall(Window w, long count, DataType type, ReduceOp op) {
    if (w == null || w.owner() != this) {
      throw new IllegalArgumentException("rank " + rank + ": allReduce on a window of another "
          + "communicator (or null)");
    }
    if (type == null || op == null || count < 0 || count * type.size() > w.bytes()) {
      throw new IllegalArgumentException("rank " + rank + ": allReduce of " + count + " x "
          + type + " does not fit its window of " + w.bytes() + " bytes");
    }
  }

  /**
   * A window's input is the caller's to write as soon as the call returns, so its plan is never
   * one that leaves the last barrier to the next call ({@code OneShot.allReduceReleased}).
   */
  private void allReduceWindow(Window w, long count, DataType type, ReduceOp op) {
    Plan p = allReducePlan(null, count, type, false);
    long t0 = System.nanoTime();
    runner.run(p, ++sequence, w.base(), op, config.timeout());
    CommStats.record(p.algorithm(), p.bytes(), System.nanoTime() - t0);
  }

  /**
   * The staged part of a GPU plan across nodes ({@code StagedHierarchical}): steps
   * {@code [from, to)} of plan rank {@code rank}'s steps, its stage-outs and stage-ins through
   * {@code stage} and its message steps over this communicator's network link, which is the
   * slice owners' (one rank per node; {@code linkPeer} maps the plan's ranks to this
   * communicator's topology ranks, see {@link #topologyRankOf}). One collective of this
   * communicator: its sequence number, the whole plan's descriptor on every message, its
   * failure handling (the peers are told, a timeout carries the hang report). Runs on the
   * caller's thread unless asynchronous collectives are queued ahead; returns once the last
   * stage-in is issued.
   */
  public void runStaged(Plan plan, int rank, int from, int to, int[] linkPeer,
      HostStaging stage, ReduceOp op, long deadline) {
    runSync("staged allreduce", 1, () -> staged.run(plan, rank, from, to, linkPeer,
        stage, ++sequence, op, deadline));
  }

  /** The topology rank (see {@link #topologyRank()}) of the rank {@code rank} numbers. */
  public int topologyRankOf(int rank) {
    requireRank("topologyRankOf", rank);
    return planOf[rank];
  }

  private long windows(long count, DataType type) {
    return Math.max(1, (count + windowElements(type) - 1) / windowElements(type));
  }

  /**
   * Elements of one rank's piece in a window of a reduce-scatter or all-gather: the segment
   * shared by all ranks' pieces, rounded down to the alignment so that piece boundaries are
   * plan slice boundaries.
   */
  private long pieceElements(DataType type) {
    int align = config.plan().alignElements(type.size());
    return windowElements(type) / size() / align * align;
  }

  private long largestSlice(long count, DataType type) {
    int align = config.plan().alignElements(type.size());
    long most = 0;
    for (int p = 0; p < size(); p++) {
      most = Math.max(most, Slices.size(count, size(), p, align));
    }
    return most;
  }

  private long sliceWindows(String what, long count, DataType type) {
    long piece = pieceElements(type);
    if (piece == 0) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " of " + count + " x "
          + type + " needs windows, but the shared segment of " + config.segmentBytes()
          + " bytes is smaller than " + size() + " ranks x " + config.plan().alignBytes()
          + " bytes; raise segmentBytes (spark.treeline.segmentBytes)");
    }
    return Math.max(1, (largestSlice(count, type) + piece - 1) / piece);
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
    long bytes;
    try {
      bytes = Math.multiplyExact(count, type.size());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " of " + count + " x "
          + type + ": the byte size overflows a long");
    }
    requireBuffer(what, "input", in, bytes, count, type);
    requireBuffer(what, "output", out, bytes, count, type);
  }

  private void requireBuffer(String what, String which, ByteBuffer b, long bytes, long count,
      DataType type) {
    if (b == null) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + ": the " + which
          + " buffer is null");
    }
    if (!b.isDirect() || b.order() != java.nio.ByteOrder.nativeOrder()) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + ": the " + which
          + " buffer must be direct and in native order (ByteBuffer.allocateDirect(n).order("
          + "ByteOrder.nativeOrder())), or use the array and FloatBuffer-style forms; got "
          + (b.isDirect() ? "direct" : "heap") + ", " + b.order());
    }
    if (b.isReadOnly() && which.equals("output")) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + ": the output buffer"
          + " is read-only");
    }
    if ((long) b.capacity() < bytes) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " of " + count + " x "
          + type + " needs " + bytes + " bytes; the " + which + " buffer holds "
          + b.capacity());
    }
  }

  private void requireOp(String what, ReduceOp op) {
    if (op == null) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " needs a ReduceOp");
    }
  }

  private void requireRank(String what, int r) {
    if (r < 0 || r >= size()) {
      throw new IllegalArgumentException("rank " + rank + ": " + what + " " + r + " is not a "
          + "rank of this communicator (0.." + (size() - 1) + ", as rank() numbers them)");
    }
  }

  private Handle submit(String what, long windows, Body body) {
    state.requireOpen(what);
    queued.incrementAndGet();
    Future<?> f;
    try {
      f = worker.submit(() -> {
        try {
          runBody(what, body);
        } finally {
          queued.decrementAndGet();
        }
        return null;
      });
    } catch (RuntimeException e) {
      queued.decrementAndGet();
      throw e;
    }
    return new FutureHandle(f, rank, what, callBound(windows));
  }

  /**
   * A blocking collective runs on the caller's thread when no asynchronous one is queued ahead
   * of it (order is kept): handing it to the worker and back costs two thread wake-ups, each
   * tens of microseconds in a VM and up to a scheduler tick on a busy machine, which is more
   * than a small allreduce itself. close() waits for an inline call as for the worker.
   */
  private void runSync(String what, long windows, Body body) {
    if (queued.get() > 0) {
      submit(what, windows, body).await();
      return;
    }
    state.requireOpen(what);
    inline.incrementAndGet();
    try {
      state.requireOpen(what); // close() may have looked at inline before the increment
      runBody(what, body);
    } finally {
      inline.decrementAndGet();
    }
  }

  /** One collective's body with the failure handling every path shares. */
  private void runBody(String what, Body body) {
    state.requireHealthy(what);
    try {
      if (FaultInjection.ON) {
        FaultInjection.at("between", rank, sequence + 1);
      }
      body.run();
    } catch (RuntimeException | Error e) {
      throw failed(e);
    }
  }

  /**
   * Records {@code e} as this communicator's failure (telling the peers once) and returns what
   * to throw: a timeout with the hang report of who waits for whom, asked before the abort
   * releases everyone; an Error is rethrown from here.
   */
  private RuntimeException failed(Throwable e) {
    Throwable thrown = e instanceof CollectiveTimeoutException t
        ? t.withReport(network.describeWaits(REPORT_BUDGET)) : e;
    state.fail(thrown);
    if (thrown instanceof Error err) {
      throw err;
    }
    return (RuntimeException) thrown;
  }

  /**
   * How long a synchronous call waits for its collective: the collective's own deadlines, plus
   * time for a timed-out one to gather the hang report, so that the caller gets that failure
   * (which names who is behind) and not a bare timeout of its own.
   */
  private Duration callBound(long windows) {
    return config.timeout().multipliedBy(windows).plus(REPORT_BUDGET).plusSeconds(1);
  }

  private void windowed(Buffer in, Buffer out, long count, DataType type, PlanFor plans,
      ReduceOp op) {
    long window = windowElements(type);
    for (long done = 0; done < count || (count == 0 && done == 0); done += window) {
      long c = Math.min(window, count - done);
      runOne(plans.of(c), in, done, out, done, c, type, op);
      if (count == 0) {
        break;
      }
    }
  }

  private void whole(Buffer in, Buffer out, long count, DataType type, Plan plan,
      ReduceOp op) {
    runOne(plan, in, 0, out, 0, count, type, op);
  }

  /**
   * A reduce-scatter ({@code reduce}) or all-gather larger than the segment, in windows. Window
   * k carries piece k of every rank's slice, packed at {@code p * width} for topology rank p:
   * since {@code width} is a multiple of the alignment, that is exactly the slice a plan over
   * {@code size() * width} elements gives p. Ranks whose slice is shorter leave the rest of
   * their place unused (reduced or forwarded, never copied out).
   * <pre>
   *   message:  |  slice 0  |  slice 1  |  slice 2 |        (pieces of width w)
   *   window k: | piece k of 0 | piece k of 1 | piece k of 2 |  = one plan over 3w elements
   * </pre>
   */
  private void bySlices(Buffer in, Buffer out, long count, DataType type, ReduceOp op,
      boolean reduce) {
    int n = size();
    int align = config.plan().alignElements(type.size());
    long piece = pieceElements(type);
    long largest = largestSlice(count, type);
    for (long start = 0; start < largest; start += piece) {
      long width = Math.min(piece, (largest - start + align - 1) / align * align);
      Plan plan = reduce ? reduceScatterPlan(n * width, type) : allGatherPlan(n * width, type);
      for (int p = 0; p < n; p++) {
        if (reduce || p == planRank) {
          long lo = Slices.lo(count, n, p, align) + start;
          copyIn(in, lo, p * width, pieceLength(count, n, p, align, start, width), type);
        }
      }
      execute(plan, op);
      for (int p = 0; p < n; p++) {
        if (!reduce || p == planRank) {
          long lo = Slices.lo(count, n, p, align) + start;
          copyOut(p * width, out, lo, pieceLength(count, n, p, align, start, width), type);
        }
      }
    }
  }

  private static long pieceLength(long count, int n, int p, int align, long start, long width) {
    return Math.max(0, Math.min(width, Slices.size(count, n, p, align) - start));
  }

  /**
   * Whether two-shot's all-gather writes a ByteBuffer caller's output directly
   * ({@link PlanRunner#run(Plan, long, long, ReduceOp, Duration, ByteBuffer, long)}), and
   * whether a caller's direct ByteBuffer input stands in for this rank's registered INPUT where
   * the peers do not read it ({@link PlanRunner#directInput}): {@link #directPath}.
   */
  private final boolean directOutput;
  private final boolean directInput;

  /**
   * {@code treeline.directOutput} and {@code treeline.directInput}: auto turns them on where the
   * host's ranks fit its cores. Where they outnumber the cores, the caller's buffer touched
   * between the plan's barriers left 4 ranks on 2 cores at 9.3-15.6 ms for 2 MiB in 25 of 25
   * sweeps, against 0.8-7.5 ms in 14 of 15 with both off (2026-12-07, docs/BENCHMARKS.md); where
   * they fit, they save a sixth of a 4-rank call's traffic (output) and half the copy in at 2
   * ranks (input: 16 MiB 0.70-0.82x the time). true or false force them.
   */
  static boolean directPath(Tuning knob, int ranksHere, int cores) {
    return knob.get().equalsIgnoreCase("auto") ? ranksHere <= cores : knob.getBoolean();
  }

  private void runOne(Plan plan, Buffer in, long inIndex, Buffer out, long outIndex,
      long count, DataType type, ReduceOp op) {
    ByteBuffer directIn = directInput && in instanceof ByteBuffer b && b.isDirect()
        && b.order() == ByteOrder.nativeOrder() ? b : null;
    long[][] peersRead = directIn != null ? runner.directInput(plan) : null;
    if (peersRead == null) {
      directIn = null;
      copyIn(in, inIndex, 0, count, type);
    } else {
      for (int k = 0; k < peersRead[0].length; k++) {
        copyIn(in, inIndex + peersRead[0][k], peersRead[0][k], peersRead[1][k], type);
      }
    }
    ByteBuffer direct = directOutput && out instanceof ByteBuffer b ? b : null;
    if (!execute(plan, op, direct, outIndex * type.size(), directIn, inIndex * type.size())) {
      copyOut(0, out, outIndex, count, type);
    }
  }

  private void execute(Plan plan, ReduceOp op) {
    execute(plan, op, null, 0);
  }

  /**
   * Runs {@code plan}; with {@code out}, the runner writes what it can of the result straight
   * there (two-shot's all-gather) and returns true when {@code out} then holds all of it.
   */
  private boolean execute(Plan plan, ReduceOp op, ByteBuffer out, long outOffset) {
    return execute(plan, op, out, outOffset, null, 0);
  }

  /** {@link #execute(Plan, ReduceOp, ByteBuffer, long)}, own INPUT reads from {@code in}. */
  private boolean execute(Plan plan, ReduceOp op, ByteBuffer out, long outOffset, ByteBuffer in,
      long inOffset) {
    long t0 = System.nanoTime();
    boolean done = runner.run(plan, ++sequence, 0, op, config.timeout(), out, outOffset, in,
        inOffset);
    CommStats.record(plan.algorithm(), plan.bytes(), System.nanoTime() - t0);
    return done;
  }

  /** Elements {@code [from, from + n)} of the caller's data into this rank's input at {@code to}. */
  private void copyIn(Buffer src, long from, long to, long n, DataType type) {
    if (n == 0) {
      return;
    }
    runner.awaitRelease(config.timeout()); // the peers' reads of the last call come first
    if (src instanceof ByteBuffer b) {
      runner.copy(type, b, from * type.size(), ownInput, to * type.size(), n,
          config.timeout());
    } else {
      TypedViews.copy(segment().in(type), (int) to, src, (int) from, (int) n);
    }
  }

  /** Elements {@code [from, from + n)} of this rank's output into the caller's data at {@code to}. */
  private void copyOut(long from, Buffer dst, long to, long n, DataType type) {
    if (n == 0) {
      return;
    }
    if (dst instanceof ByteBuffer b) {
      runner.copy(type, ownOutput, from * type.size(), b, to * type.size(), n,
          config.timeout());
    } else {
      TypedViews.copy(dst, (int) to, segment().out(type), (int) from, (int) n);
    }
  }

  /** Made on the collective thread at the first array or typed-buffer call. */
  private TypedViews segment() {
    if (views == null) {
      views = new TypedViews(ownInput, ownOutput);
    }
    return views;
  }

  // ---- shutdown ------------------------------------------------------------------------------

  /** Releases segments, mappings, sockets and threads; safe after a failure and twice. */
  @Override
  public void close() {
    if (!state.close()) {
      return;
    }
    if (state.broken() == null) {
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
    long inlineDeadline = System.nanoTime() + config.timeout().toNanos() + 5_000_000_000L;
    while (stopped && inline.get() > 0) { // a blocking call on its caller's thread
      if (System.nanoTime() - inlineDeadline > 0) {
        stopped = false;
        break;
      }
      java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
    }
    if (!stopped) {
      // a thread still inside a collective could touch the mappings: leave them to the GC
      LOG.log(System.Logger.Level.WARNING, "rank " + rank + ": the collective thread did not "
          + "stop; leaving its shared memory mapped");
      return;
    }
    runner.close();
    memory.close();
  }
}
