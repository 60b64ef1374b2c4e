package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGetUuid;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuIpcGetEventHandle;
import static jcuda.driver.JCudaDriver.cuIpcGetMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenEventHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenMemHandle;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemsetD8;
import static jcuda.driver.JCudaDriver.cuStreamCreate;

import io.treeline.bootstrap.Bootstrap;
import io.treeline.bootstrap.BootstrapException;
import io.treeline.comm.CallState;
import io.treeline.comm.CommConfig;
import io.treeline.comm.PeerInfo;
import io.treeline.comm.PlanCache;
import io.treeline.comm.RankLayout;
import io.treeline.core.DataType;
import io.treeline.core.Handle;
import io.treeline.core.ReduceOp;
import io.treeline.exec.BackoffIdleStrategy;
import io.treeline.exec.CallDescriptor;
import io.treeline.core.CollectiveException;
import io.treeline.exec.PlanRunner;
import io.treeline.kernels.CudaQueries;
import io.treeline.kernels.DevicePointers;
import io.treeline.kernels.CopyKernels;
import io.treeline.kernels.CudaModule;
import io.treeline.kernels.FlagKernels;
import io.treeline.kernels.ReduceKernels;
import io.treeline.kernels.IpcHandles;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Plan;
import io.treeline.plan.StagedHierarchical;
import io.treeline.plan.Step;
import io.treeline.plan.Topology;
import io.treeline.transport.shm.SharedSegment;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUipcEventHandle;
import jcuda.driver.CUipcMemHandle;
import jcuda.driver.CUipcMem_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.CUuuid;
import jcuda.CudaException;

/**
 * Allreduce of device memory among the ranks of one node, through CUDA IPC: every rank
 * registers an INPUT and an OUTPUT buffer on its GPU, the ranks exchange their IPC handles
 * (64 raw bytes each) through the bootstrap and map each other's buffers with lazy peer access,
 * and the plans of the host path ({@code OneShot} for small messages, {@code TwoShot} for large)
 * run as kernels that read the peers' buffers in place ({@link DevicePlanRunner}). Ranks in the
 * same process share addresses directly (an IPC handle cannot be opened by the process that made
 * it).
 *
 * <p>The mapped buffers and their synchronisation are the rank's {@link CudaPeerMemory}, the
 * transport SPI's {@code LocalPeerMemory} on the GPU, which {@link DevicePlanRunner}'s compiled
 * Signal/Wait steps drive. Synchronisation ({@link DeviceOptions.Sync}): on distinct GPUs a
 * barrier kernel on flags in peer memory; on ranks that share a GPU, IPC events ordered by a
 * handshake in each rank's shared-memory segment, which also carries the call descriptor (a rank making a different call
 * fails every rank with both calls named) and the abort word (a failing rank fails its peers at
 * once).
 *
 * <p>The implementation of the user interface {@link io.treeline.core.DeviceCommunicator} (its
 * javadoc is the contract). Calls enqueue work on the communicator's stream and return;
 * {@link #synchronize()} waits for it (with the timeout). The stream is a blocking stream, so
 * work on the legacy default stream before a call is ordered before it. One thread at a time
 * per communicator.
 * {@link #close()} closes every IPC mapping and event, frees the buffers and removes the
 * segment, also after a failure.
 */
public final class DeviceCommunicator implements io.treeline.core.DeviceCommunicator {
  private static final System.Logger LOG = System.getLogger("io.treeline.cuda");
  private static final int EVENTS = 2 * PlanRunner.PHASES;
  private static final long FLAGS_BYTES = FlagKernels.FLAG_ARRAY_BYTES;

  private final CommConfig config;
  private final DeviceOptions options;
  private final CudaModule module;
  private final ReduceKernels reducers;
  private final CopyKernels copies;
  private final FlagKernels flagKernels;
  private final CUstream stream;
  private final Topology topology;
  /** This node's ranks alone: the topology of the plans that run on device memory. */
  private final Topology localTopology;
  private final int rank;
  private final int planRank;
  private final int localRank;
  private final String gpu;
  private final DeviceOptions.Sync sync;
  private final DeviceCostModel costModel;
  private final DeviceResources res;
  private final DevicePlanRunner runner;
  private final PlanCache<DevicePlanRunner.Program> programs = new PlanCache<>();
  private final PlanCache<Staged> staged = new PlanCache<>();
  /** The staged plan of the last call: a training loop's every step takes it without a lookup. */
  private Staged lastStaged;
  /** The staged plan being enqueued (its stage-ins finish through {@link #finisher}). */
  private Staged running;
  private final HostStage.Finish finisher = this::finishChunk;
  /** This rank in the staged plans: node-major, with its node's ranks in local-rank order. */
  private final int stagedRank;
  private final BackoffIdleStrategy idle = BackoffIdleStrategy.defaults();
  private final long[] statusWords = new long[4];
  // argument arrays of the launches this class makes itself, filled per call
  private final long[] copySrc = new long[1];
  private final long[] copyDst = new long[1];
  private final long[] copyBytes = new long[1];
  private final long[] finishSrc = new long[1];
  private final long[] segmentSrc = new long[CopyKernels.MAX_SEGMENTS];
  private final long[] segmentDst = new long[CopyKernels.MAX_SEGMENTS];
  private final long[] segmentBytes = new long[CopyKernels.MAX_SEGMENTS];
  /** The last call whose work the host saw finish (a {@link #synchronize()} that returned). */
  private long synchronizedUpTo;
  private DevicePlanRunner.Program last;
  /** The node's registered buffers and the synchronisation on them, behind the transport SPI. */
  private final CudaPeerMemory memory;
  private long sequence;
  private final CallState state;

  private DeviceCommunicator(CommConfig config, DeviceOptions options, DeviceResources res,
      Topology topology, int rank, int planRank, int localRank, String gpu,
      DeviceOptions.Sync sync,
      DeviceCostModel costModel, long[] input, long[] output) {
    this.config = config;
    this.options = options;
    this.res = res;
    this.module = res.module;
    this.reducers = new ReduceKernels(module);
    this.copies = new CopyKernels(module);
    this.flagKernels = new FlagKernels(module);
    this.stream = res.stream;
    this.topology = topology;
    this.rank = rank;
    this.planRank = planRank;
    this.localTopology = Topology.of(topology.localSize(topology.node(planRank)));
    this.localRank = localRank;
    this.stagedRank = topology.rank(topology.node(planRank), localRank);
    this.gpu = gpu;
    this.sync = sync;
    this.costModel = costModel;
    this.memory = new CudaPeerMemory(sync == DeviceOptions.Sync.FLAGS, localRank,
        localTopology.size(), res.segments, res.pids, res.events, res.eventsOf, res.flagsOf,
        res.ranks, flagKernels, stream, config.timeout(), this::isClosed, res::release);
    this.state = new CallState(planRank, rank, "GPU collective", memory::abort);
    this.runner = new DevicePlanRunner(reducers, copies, stream, memory, localRank, input,
        output);
  }

  /**
   * Set up the GPU path over all ranks of {@code bootstrap}, which must share one node;
   * collective: every rank calls it. Throws where there is no usable GPU (no driver, no fatbin),
   * so that callers can run the host path instead.
   */
  public static DeviceCommunicator create(Bootstrap bootstrap, CommConfig config,
      DeviceOptions options) {
    int rank = bootstrap.rank();
    int n = bootstrap.size();
    DeviceResources r = new DeviceResources();
    try {
      r.module = new CudaModule(options.ordinal());
      CUuuid uuid = new CUuuid();
      cuDeviceGetUuid(uuid, r.module.device());
      String gpu = io.treeline.kernels.GpuDevices.formatUuid(uuid.bytes);
      String[] bus = new String[1];
      jcuda.driver.JCudaDriver.cuDeviceGetPCIBusId(bus, 64, r.module.device());
      String busId = io.treeline.kernels.GpuDevices.normalizeBusId(bus[0]);
      r.stream = new CUstream();
      cuStreamCreate(r.stream, CUstream_flags.CU_STREAM_DEFAULT);
      r.input = alloc(options.bufferBytes());
      r.output = alloc(options.bufferBytes());
      r.flags = alloc(FLAGS_BYTES);
      cuMemsetD8(r.flags, (byte) 0, FLAGS_BYTES);
      r.events = new CUevent[EVENTS];
      byte[][] eventHandles = new byte[EVENTS][];
      for (int i = 0; i < EVENTS; i++) {
        r.events[i] = new CUevent();
        cuEventCreate(r.events[i], CUevent_flags.CU_EVENT_INTERPROCESS
            | CUevent_flags.CU_EVENT_DISABLE_TIMING);
        CUipcEventHandle h = new CUipcEventHandle();
        cuIpcGetEventHandle(h, r.events[i]);
        eventHandles[i] = IpcHandles.bytes(h);
      }
      long pid = ProcessHandle.current().pid();
      Path path = SharedSegment.directory().resolve("treeline-gpu-"
          + SharedSegment.jobTag(bootstrap.secret()) + "-r" + rank + "-p" + pid);
      r.own = SharedSegment.create(path, rank, 64);
      r.localKey = path.toString();
      DeviceResources.LOCAL_EVENTS.put(r.localKey, r.events);
      DeviceAddress address = new DeviceAddress(gpu, busId, path.toString(),
          DevicePointers.address(r.input), DevicePointers.address(r.output),
          DevicePointers.address(r.flags), memHandle(r.input), memHandle(r.output),
          memHandle(r.flags), eventHandles);
      // the host path's codec: who each rank is, and its device address as its peer memory
      PeerInfo[] infos = PeerInfo.exchange(bootstrap, new PeerInfo(rank, bootstrap.nodeId(), pid,
          address.encode(), new byte[0]), config.timeout());
      DeviceAddress[] addresses = new DeviceAddress[n];
      for (int p = 0; p < n; p++) {
        addresses[p] = DeviceAddress.decode(infos[p].memory());
      }
      RankLayout layout = RankLayout.of(PeerInfo.nodes(infos));
      Topology topo = layout.topology();
      int mine = layout.planOf()[rank];
      int node = topo.node(mine);
      int local = topo.localSize(node);
      // local indices in the order that spreads the node's GPUs across PCIe switches; every
      // rank tells the others its index (other nodes' PCI trees are not readable from here)
      java.util.List<String> buses = new java.util.ArrayList<>();
      for (int l = 0; l < local; l++) {
        buses.add(addresses[layout.bootOf()[topo.rank(node, l)]].busId());
      }
      int[] order = io.treeline.topology.LocalRankOrder.order(buses,
          io.treeline.topology.LocalRankOrder::sysfs);
      int myLocal = 0;
      while (order[myLocal] != topo.localRank(mine)) {
        myLocal++;
      }
      byte[][] positions = bootstrap.allGather(new byte[] {(byte) myLocal}, config.timeout());
      if (!topo.isUniform()) {
        throw new UnsupportedOperationException("the GPU path needs the same number of ranks "
            + "on every node (the ranks with the same local index form the groups across "
            + "nodes); these nodes have " + topo);
      }
      if (local > ReduceKernels.MAX_INPUTS) {
        throw new UnsupportedOperationException("the GPU path reduces at most "
            + ReduceKernels.MAX_INPUTS + " ranks of a node in one kernel; node " + node
            + " has " + local);
      }
      // everything below is indexed by local rank: the node's ranks map each other's memory
      long[] input = new long[local];
      long[] output = new long[local];
      r.flagsOf = new long[local];
      r.pids = new long[local];
      r.ranks = new int[local];
      r.segments = new SharedSegment[local];
      r.eventsOf = new CUevent[local][];
      boolean distinct = true;
      boolean oneProcess = true;
      java.util.Set<String> gpus = new java.util.HashSet<>();
      for (int l = 0; l < local; l++) {
        int boot = layout.bootOf()[topo.rank(node, order[l])];
        PeerInfo peer = infos[boot];
        DeviceAddress info = addresses[boot];
        r.pids[l] = peer.pid();
        r.ranks[l] = peer.rank();
        distinct &= gpus.add(info.gpu());
        oneProcess &= peer.pid() == pid;
        if (l == myLocal) {
          input[l] = info.input();
          output[l] = info.output();
          r.flagsOf[l] = info.flags();
          r.segments[l] = r.own;
          r.eventsOf[l] = r.events;
        } else if (peer.pid() == pid) {
          if (!info.gpu().equals(gpu)) {
            throw new UnsupportedOperationException("ranks " + rank + " and " + peer.rank()
                + " are in one process on different GPUs; run one process per GPU");
          }
          input[l] = info.input();
          output[l] = info.output();
          r.flagsOf[l] = info.flags();
          r.segments[l] = SharedSegment.open(Path.of(info.segment()), peer.rank());
          r.eventsOf[l] = DeviceResources.LOCAL_EVENTS.get(info.segment());
          if (r.eventsOf[l] == null) {
            throw new IllegalStateException("rank " + peer.rank() + " is in this process but "
                + "its events are not registered");
          }
        } else {
          input[l] = open(r, info.inputHandle(), rank, peer.rank(), "INPUT");
          output[l] = open(r, info.outputHandle(), rank, peer.rank(), "OUTPUT");
          r.flagsOf[l] = open(r, info.flagsHandle(), rank, peer.rank(), "flags");
          r.segments[l] = SharedSegment.open(Path.of(info.segment()), peer.rank());
          r.eventsOf[l] = new CUevent[EVENTS];
          for (int i = 0; i < EVENTS; i++) {
            CUevent e = new CUevent();
            cuIpcOpenEventHandle(e, IpcHandles.eventHandle(info.events()[i]));
            r.peerEvents.add(e);
            r.eventsOf[l][i] = e;
          }
        }
      }
      DeviceOptions.Sync sync = options.sync() == DeviceOptions.Sync.AUTO
          ? (distinct && local > 1 ? DeviceOptions.Sync.FLAGS : DeviceOptions.Sync.EVENTS)
          : options.sync();
      bootstrap.barrier(config.timeout()); // every peer has mapped our segment
      r.own.unlink();
      if (topo.nodes() > 1) {
        // the ranks with our local index on every node, in node order: our group across nodes
        int[] members = new int[topo.nodes()];
        for (int k = 0; k < members.length; k++) {
          for (int l = 0; l < local; l++) {
            int b = layout.bootOf()[topo.rank(k, l)];
            if (positions[b][0] == myLocal) {
              members[k] = b;
            }
          }
        }
        r.stage = new HostStage(io.treeline.comm.HostCommunicator.create(
            new io.treeline.bootstrap.SubsetBootstrap(bootstrap, members), config),
            options.bufferBytes() / local + 4096, options.stagingChunkBytes());
      }
      LOG.log(System.Logger.Level.INFO, "rank " + rank + ": GPU path on " + gpu + ", node "
          + node + " of " + topo.nodes() + ", " + local + " local ranks" + (distinct
          ? " on distinct GPUs" : " sharing GPUs") + ", sync " + sync + ", "
          + options.bufferBytes() + " bytes per registered buffer");
      DeviceCostModel model = options.costModel() != null ? options.costModel()
          : DeviceOptions.defaultCostModel(!distinct, oneProcess, local);
      return new DeviceCommunicator(config, options, r, topo, rank, mine, myLocal, gpu, sync,
          model, input, output);
    } catch (IOException | RuntimeException | LinkageError e) {
      r.release();
      if (e instanceof BootstrapException b) {
        throw b;
      }
      throw new BootstrapException("rank " + rank + ": cannot set up the GPU path: " + e, e);
    }
  }

  private static CUdeviceptr alloc(long bytes) {
    CUdeviceptr p = new CUdeviceptr();
    cuMemAlloc(p, bytes);
    return p;
  }

  private static byte[] memHandle(CUdeviceptr p) {
    CUipcMemHandle h = new CUipcMemHandle();
    cuIpcGetMemHandle(h, p);
    return IpcHandles.bytes(h);
  }

  private static long open(DeviceResources r, byte[] handle, int rank, int peer, String what) {
    CUdeviceptr p = new CUdeviceptr();
    try {
      cuIpcOpenMemHandle(p, IpcHandles.memHandle(handle),
          CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    } catch (CudaException e) {
      throw new CollectiveException(rank, peer, "setup", "cannot open rank " + peer + "'s " + what
          + " IPC handle (" + e.getMessage() + "): the GPUs cannot map each other's memory "
          + "(containers or cgroups may forbid CUDA IPC; ./treeline topo --probe-ipc shows which "
          + "pairs can)", e);
    }
    r.mappings.add(p);
    return DevicePointers.address(p);
  }

  // ---- who is who ----------------------------------------------------------------------------

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return topology.size();
  }

  @Override
  public int nodeCount() {
    return topology.nodes();
  }

  @Override
  public int localSize() {
    return localTopology.size();
  }

  @Override
  public int deviceOrdinal() {
    return options.ordinal();
  }

  @Override
  public java.time.Duration timeout() {
    return config.timeout();
  }

  /**
   * This rank's index among its node's ranks, in the order that spreads their GPUs across PCIe
   * switches: the slice its reduce-scatter owns, and its group across nodes.
   */
  @Override
  public int localRank() {
    return localRank;
  }

  /** This rank's place in node-major order over all ranks (nodes in order of their lowest rank). */
  @Override
  public int topologyRank() {
    return planRank;
  }

  /** The UUID of this rank's GPU, as nvidia-smi prints it. */
  @Override
  public String gpu() {
    return gpu;
  }

  public DeviceOptions.Sync sync() {
    return sync;
  }

  /** The driver's handle of this rank's stream (see {@link #cudaStream()}). */
  @Override
  public long stream() {
    return DevicePointers.handle(stream);
  }

  /** The stream every call enqueues on. */
  public CUstream cudaStream() {
    return stream;
  }

  /** The CUDA context this rank's work runs in (the device's primary context). */
  public jcuda.driver.CUcontext context() {
    return module.context();
  }

  /** Device address of this rank's registered INPUT ({@link #capacityBytes()} bytes). */
  @Override
  public long input() {
    return DevicePointers.address(res.input);
  }

  /** Device address of this rank's registered OUTPUT, where in-place allreduces leave results. */
  @Override
  public long output() {
    return DevicePointers.address(res.output);
  }

  @Override
  public long capacityBytes() {
    return options.bufferBytes();
  }

  /**
   * The algorithm the cost model picks for {@code bytes}: one-shot or two-shot inside a node,
   * hierarchical (two-shot phases inside, host trees across) over several nodes.
   */
  public Algorithm select(long bytes) {
    if (topology.nodes() > 1) {
      return Algorithm.HIERARCHICAL;
    }
    Algorithm forced = config.algorithm(); // hierarchical on one node is two-shot or one-shot
    return forced != null && forced != Algorithm.HIERARCHICAL ? forced
        : costModel.choose(localTopology.size(), bytes);
  }

  // ---- collectives ---------------------------------------------------------------------------

  /**
   * Enqueue an allreduce of the first {@code count} elements of this rank's registered INPUT
   * into its registered OUTPUT (they must fit {@link #capacityBytes()}). {@code algorithm} null:
   * the configured one or the cost model's choice. Every rank must make the same call.
   */
  public void allReduce(long count, DataType type, ReduceOp op, Algorithm algorithm) {
    requireCall(count, type, op);
    if (count * type.size() > options.bufferBytes()) {
      throw new IllegalArgumentException("rank " + rank + ": " + count + " x " + type + " is "
          + count * type.size() + " bytes, more than the registered buffer of "
          + options.bufferBytes() + "; use allReduce(src, dst, ...) (it runs in windows) or "
          + "raise the buffer size");
    }
    one(count, type, op, algorithm);
  }

  @Override
  public void allReduce(long count, DataType type, ReduceOp op) {
    allReduce(count, type, op, null);
  }

  @Override
  public Handle allReduceAsync(long count, DataType type, ReduceOp op) {
    allReduce(count, type, op, null);
    return new CallHandle(sequence);
  }

  @Override
  public void allReduce(long src, long dst, long count, DataType type, ReduceOp op) {
    allReduce(src, dst, count, type, op, null);
  }

  @Override
  public Handle allReduceAsync(long src, long dst, long count, DataType type, ReduceOp op) {
    allReduce(src, dst, count, type, op, null);
    return new CallHandle(sequence);
  }

  /** Argument errors fail the call on this rank before anything is enqueued. */
  private void requireCall(long count, DataType type, ReduceOp op) {
    if (type == null || op == null) {
      throw new IllegalArgumentException("rank " + rank + ": allReduce needs a data type and a "
          + "ReduceOp");
    }
    if (count < 0) {
      throw new IllegalArgumentException("rank " + rank + ": allReduce of " + count
          + " elements");
    }
  }

  /** One allreduce of the registered buffers: inside the node, or across nodes through hosts. */
  private void one(long count, DataType type, ReduceOp op, Algorithm algorithm) {
    if (topology.nodes() == 1) {
      run(program(count, type, op, algorithm == Algorithm.HIERARCHICAL ? null : algorithm));
      return;
    }
    if (algorithm != null && algorithm != Algorithm.HIERARCHICAL) {
      throw new IllegalArgumentException(algorithm.id() + " runs inside one node; these ranks "
          + "span " + topology.nodes() + " nodes (the GPU path runs hierarchical there)");
    }
    across(count, type, op);
  }

  /**
   * Across nodes: the {@link StagedHierarchical} plan of this call, run as it is written. Its
   * device steps before the staging (the node's reduce-scatter into this rank's OUTPUT slice)
   * and after it (the all-gather) are compiled into launches like any device plan; its staged
   * part runs step by step in {@link HostStage}: the stage-outs as device-to-host copies into
   * pinned host memory, the chunk trees' message steps over the TCP link of the ranks with the
   * same local index (an {@code exec.StagedRunner} on that host communicator), the stage-ins as
   * host-to-device copies, overlapping chunk by chunk; each stage-in that finishes divides an
   * AVG once, by all ranks, on the GPU. One call, one sequence number, as the plan is one
   * collective.
   */
  private void across(long count, DataType type, ReduceOp op) {
    Staged st = lastStaged;
    if (st == null || st.plan.count() != count || st.plan.type() != type || st.op != op) {
      String key = "staged:" + count + ':' + type + ':' + op; // a new shape only
      st = staged.get(key);
      if (st == null) {
        st = staged.put(key, compileStaged(StagedHierarchical.allReduce(topology, type, count,
            config.plan(), options.stagingChunkBytes()), op));
      }
      lastStaged = st;
    }
    begin(st.plan, op);
    long deadline = System.nanoTime() + config.timeout().toNanos();
    try {
      runner.run(st.before, sequence, deadline);
      if (st.from < st.to) {
        running = st;
        res.stage.run(st.plan, stagedRank, st.from, st.to, st.linkPeer, output(), op, stream,
            deadline, finisher);
      }
      runner.run(st.after, sequence, deadline);
    } catch (RuntimeException | Error e) {
      fail(e);
      throw e;
    } finally {
      running = null;
    }
  }

  /** A stage-in that finishes: an AVG divides the chunk once, by all ranks, on the GPU. */
  private void finishChunk(long offset, long count) {
    Staged st = running;
    if (st.op == ReduceOp.AVG) {
      finishSrc[0] = output() + offset * st.plan.type().size();
      reducers.reduce(st.sumKernel, finishSrc[0], finishSrc, 1, count, true, topology.size(),
          stream);
    }
  }

  /**
   * A staged plan compiled for this rank: device programs around its staged part, steps
   * {@code [from, to)} of its steps (stage copies and message steps, run as they are written by
   * {@link HostStage}), and the plan's ranks as the slice owners' communicator numbers them.
   */
  private record Staged(Plan plan, ReduceOp op, DevicePlanRunner.Program before,
      DevicePlanRunner.Program after, int from, int to, int[] linkPeer, int sumKernel) {
  }

  /**
   * Splits this rank's steps of {@code plan}: device steps before its first stage-out, the staged
   * part (from the first stage-out to the last stage-in: stage and message steps only), and
   * device steps after it. A rank whose slice is empty has no staged part; its device steps are
   * all "before".
   */
  private Staged compileStaged(Plan plan, ReduceOp op) {
    List<Step> steps = plan.steps(stagedRank);
    int[] part = io.treeline.exec.StagedRunner.stagedPart(steps);
    int from = part[0];
    int to = part[1];
    int[] linkPeer = new int[topology.size()];
    java.util.Arrays.fill(linkPeer, -1);
    if (from < to) {
      int local = topology.localRank(stagedRank);
      for (int k = 0; k < topology.nodes(); k++) {
        linkPeer[topology.rank(k, local)] = res.stage.linkRankOfNode(k);
      }
    }
    java.util.function.IntUnaryOperator localOf = topology::localRank;
    return new Staged(plan, op, runner.compile(plan, steps.subList(0, from), localOf, op),
        runner.compile(plan, steps.subList(to, steps.size()), localOf, op), from, to, linkPeer,
        ReduceKernels.kernel(plan.type().name(), "sum"));
  }

  /**
   * Enqueue {@code dst = allreduce(src)} for device buffers anywhere on this rank's GPU (they may
   * be the same): copied into the registered INPUT and out of the registered OUTPUT, in windows
   * of {@link #capacityBytes()}.
   */
  public void allReduce(long src, long dst, long count, DataType type, ReduceOp op,
      Algorithm algorithm) {
    requireCall(count, type, op);
    int es = type.size();
    long window = options.bufferBytes() / es;
    long done = 0;
    do {
      long c = Math.min(window, count - done);
      long bytes = c * es;
      copy(src + done * es, input(), bytes);
      one(c, type, op, algorithm);
      copy(output(), dst + done * es, bytes);
      done += c;
    } while (done < count);
  }

  @Override
  public void copy(long[] src, long[] dst, long[] bytes, int n) {
    if (src == null || dst == null || bytes == null || n < 0 || src.length < n
        || dst.length < n || bytes.length < n) {
      throw new IllegalArgumentException("rank " + rank + ": copy of " + n + " segments needs "
          + "src, dst and bytes arrays of at least " + n + " entries");
    }
    check("copy");
    cuCtxSetCurrent(module.context());
    int most = CopyKernels.MAX_SEGMENTS;
    if (n <= most) {
      if (n > 0) {
        copies.copy(src, dst, bytes, n, stream);
      }
      return;
    }
    for (int i = 0; i < n; i += most) {
      int k = Math.min(most, n - i);
      System.arraycopy(src, i, segmentSrc, 0, k);
      System.arraycopy(dst, i, segmentDst, 0, k);
      System.arraycopy(bytes, i, segmentBytes, 0, k);
      copies.copy(segmentSrc, segmentDst, segmentBytes, k, stream);
    }
  }

  private void copy(long from, long to, long bytes) {
    if (bytes == 0 || from == to) {
      return;
    }
    copySrc[0] = from;
    copyDst[0] = to;
    copyBytes[0] = bytes;
    copies.copy(copySrc, copyDst, copyBytes, 1, stream);
  }

  private DevicePlanRunner.Program program(long count, DataType type, ReduceOp op,
      Algorithm algorithm) {
    Algorithm a = algorithm != null ? algorithm : select(count * type.size());
    DevicePlanRunner.Program p = last;
    if (p != null && p.plan.count() == count && p.plan.type() == type && p.op == op
        && p.plan.algorithm().equals(a.id())) {
      return p;
    }
    String key = a.id() + ':' + count + ':' + type + ':' + op;
    p = programs.get(key);
    if (p == null) {
      Plan plan = a.allReduce(localTopology, type, count, config.plan());
      p = programs.put(key, runner.compile(plan, op));
    }
    last = p;
    return p;
  }

  private void run(DevicePlanRunner.Program p) {
    begin(p.plan, p.op);
    try {
      runner.run(p, sequence, System.nanoTime() + config.timeout().toNanos());
    } catch (RuntimeException | Error e) {
      fail(e);
      throw e;
    }
  }

  /** A new collective: its sequence number, and its descriptor for the peers to compare. */
  private void begin(Plan plan, ReduceOp op) {
    check("allreduce");
    cuCtxSetCurrent(module.context());
    long seq = ++sequence;
    CallDescriptor call = CallDescriptor.of(plan, op);
    memory.beginCall(seq, call);
  }

  /**
   * Wait until everything enqueued on this rank's stream has run, at most the timeout; then
   * report a flag barrier that gave up (naming the peer and the phase).
   */
  @Override
  public void synchronize() {
    synchronize(config.timeout());
  }

  /** {@link #synchronize()} waiting at most {@code timeout} for the stream. */
  private void synchronize(java.time.Duration timeout) {
    check("synchronize");
    cuCtxSetCurrent(module.context());
    long upTo = sequence;
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      while (!done()) {
        if (System.nanoTime() - deadline > 0) {
          throw CollectiveException.timeout(planRank, -1, "synchronize #" + sequence,
              "the GPU to finish this rank's collectives", timeout);
        }
        idle.idle();
      }
      idle.reset();
      if (sync == DeviceOptions.Sync.FLAGS) {
        cuMemcpyDtoH(Pointer.to(statusWords), DevicePointers.at(res.flagsOf[localRank]
            + 8L * FlagKernels.STATUS_WORD), 8L * statusWords.length);
        if (statusWords[0] != 0) {
          int peer = (int) statusWords[0] - 1;
          long value = statusWords[1];
          if (statusWords[2] == FlagKernels.MISMATCH) {
            throw memory.mismatch(rank, peer, value, statusWords[3]);
          }
          throw new CollectiveException(planRank, peer, "barrier of collective #"
              + value / PlanRunner.PHASES + " phase " + value % PlanRunner.PHASES,
              "timed out after " + config.timeout().toMillis() + " ms in the GPU flag barrier "
              + "waiting for local rank " + peer + "; the peer may have failed or be making a "
              + "different call (raise the timeout if it is only slow)", null);
        }
      }
      synchronizedUpTo = upTo;
    } catch (RuntimeException e) {
      fail(e);
      throw e;
    }
  }

  private boolean done() {
    try {
      return CudaQueries.done(stream);
    } catch (CudaException e) {
      throw new CollectiveException(planRank, -1, "synchronize #" + sequence, "the GPU failed: "
          + e.getMessage(), e);
    }
  }

  private void check(String what) {
    state.check(what);
  }

  private boolean isClosed() {
    return state.closed();
  }

  private void fail(Throwable e) {
    state.fail(e);
  }

  /** Closes every IPC mapping and event, frees the buffers and the segment; after failure too. */
  @Override
  public void close() {
    if (!state.close()) {
      return;
    }
    if (state.broken() == null) {
      memory.leave("rank " + rank + " closed its GPU communicator");
    }
    memory.close();
  }

  /**
   * The handle of one enqueued call: done once the host saw the stream pass it; waiting for it
   * is a {@link #synchronize()} (calls run in stream order, so the stream passing a later call
   * passes this one).
   */
  private final class CallHandle implements Handle {
    private final long call;

    CallHandle(long call) {
      this.call = call;
    }

    @Override
    public boolean isDone() {
      if (synchronizedUpTo >= call || state.broken() != null || state.closed()) {
        return true;
      }
      cuCtxSetCurrent(module.context());
      try {
        return done();
      } catch (CollectiveException e) {
        return true; // await throws it at once
      }
    }

    @Override
    public void await() {
      await(config.timeout());
    }

    @Override
    public void await(java.time.Duration timeout) {
      if (synchronizedUpTo < call) {
        synchronize(timeout);
      }
    }
  }
}
