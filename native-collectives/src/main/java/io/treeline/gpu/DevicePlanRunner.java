package io.treeline.gpu;

import io.treeline.exec.LocalPeerMemory;
import io.treeline.core.ReduceOp;
import io.treeline.exec.FaultInjection;
import io.treeline.exec.PlanRunner;
import io.treeline.kernels.CopyKernels;
import io.treeline.kernels.ReduceKernels;
import io.treeline.plan.Buf;
import io.treeline.plan.Plan;
import io.treeline.plan.Step;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import jcuda.driver.CUstream;

/**
 * Runs one rank's steps of a plan on device memory: the same plans as the host path
 * ({@code OneShot}, {@code TwoShot}), compiled once per (plan, op) into launches whose every
 * address is fixed, because the registered buffers of all local ranks are mapped for the life of
 * the communicator. {@code ReduceFrom} is one reduce kernel reading every peer's slice in place
 * through its IPC mapping; consecutive {@code CopyFrom}s are one copy kernel (the all-gather of
 * two-shot reads all peers' reduced slices in one launch); {@code Signal} and {@code Wait} go to
 * the rank's {@link LocalPeerMemory} ({@link CudaPeerMemory}). Nothing here waits for the GPU: a run only enqueues on the stream.
 * Message steps (across nodes) are not part of a device plan.
 */
final class DevicePlanRunner {
  private final ReduceKernels reducers;
  private final CopyKernels copies;
  private final CUstream stream;
  private final LocalPeerMemory memory;
  private final int rank;
  private final long[] input;
  private final long[] output;

  /**
   * @param input every local rank's registered INPUT by plan rank (this rank's own, peers'
   *     through their mappings; 0 for ranks of other nodes)
   */
  DevicePlanRunner(ReduceKernels reducers, CopyKernels copies, CUstream stream, LocalPeerMemory memory, int rank,
      long[] input, long[] output) {
    this.reducers = reducers;
    this.copies = copies;
    this.stream = stream;
    this.memory = memory;
    this.rank = rank;
    this.input = input;
    this.output = output;
  }

  /** One compiled launch or synchronisation. */
  private interface Op {
    void run(long base, int parity, long deadline);
  }

  /** A plan for this rank, compiled for one op: what {@link #run} takes. */
  static final class Program {
    final Plan plan;
    final ReduceOp op;
    private final Op[] ops;

    private Program(Plan plan, ReduceOp op, Op[] ops) {
      this.plan = plan;
      this.op = op;
      this.ops = ops;
    }
  }

  Program compile(Plan plan, ReduceOp op) {
    return compile(plan, plan.steps(rank), p -> p, op);
  }

  /**
   * Compile {@code steps}, device steps of {@code plan} for this rank, whose ranks map to local
   * ranks (the indices of the buffer tables) through {@code local}: the parts of a plan over
   * several nodes that run on this node's GPUs ({@code StagedHierarchical}'s reduce-scatter
   * before the staging and all-gather after it).
   */
  Program compile(Plan plan, List<Step> steps, java.util.function.IntUnaryOperator local,
      ReduceOp op) {
    int es = plan.type().size();
    int kernel = ReduceKernels.kernel(plan.type().name(), op == ReduceOp.AVG ? "sum"
        : op.name());
    int divisor = plan.size();
    String algo = plan.algorithm();
    List<Op> ops = new ArrayList<>();
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      long off = s.offset() * es;
      if (s instanceof Step.Signal sig) {
        // a barrier: this Signal and the Waits for the same phase that follow it
        List<Integer> group = new ArrayList<>();
        group.add(rank);
        int j = i + 1;
        while (j < steps.size() && steps.get(j) instanceof Step.Wait w && w.phase() == sig.phase()) {
          group.add(local.applyAsInt(w.peer()));
          j++;
        }
        int phase = sig.phase();
        if (group.size() > 1) {
          int[] g = group.stream().mapToInt(Integer::intValue).sorted().toArray();
          String what = algo + " barrier " + phase;
          ops.add((base, parity, deadline) -> memory.barrier(g, rank, base + phase, deadline,
              what));
          i = j - 1;
        } else {
          requireHalfSteps(plan, s);
          ops.add((base, parity, deadline) -> memory.signal(base + phase));
        }
      } else if (s instanceof Step.Wait w) {
        requireHalfSteps(plan, s);
        int peer = local.applyAsInt(w.peer());
        int phase = w.phase();
        String what = algo + " wait " + phase;
        ops.add((base, parity, deadline) -> memory.await(peer, base + phase, deadline, what));
      } else if (s instanceof Step.ReduceFrom r) {
        int[] peers = java.util.Arrays.stream(r.peers()).map(local).toArray();
        if (peers.length > ReduceKernels.MAX_INPUTS) {
          throw new IllegalArgumentException("a device reduce reads at most "
              + ReduceKernels.MAX_INPUTS + " peers; this node has " + peers.length + " ranks");
        }
        long[] src = new long[peers.length];
        for (int k = 0; k < peers.length; k++) {
          src[k] = (r.buf() == Buf.INPUT ? input : output)[peers[k]] + off;
        }
        long dst = output[rank] + off;
        long count = s.count();
        boolean finish = r.finish() && op == ReduceOp.AVG;
        ops.add((base, parity, deadline) -> reducers.reduce(kernel, dst, src, src.length, count,
            finish, divisor, stream));
      } else if (s instanceof Step.Copy c) {
        long[] src = {input[rank] + off};
        long dst = output[rank] + off;
        long count = s.count();
        boolean finish = c.finish() && op == ReduceOp.AVG;
        ops.add((base, parity, deadline) -> reducers.reduce(kernel, dst, src, 1, count, finish,
            divisor, stream));
      } else if (s instanceof Step.CopyFrom) {
        long[] src = new long[ReduceKernels.MAX_INPUTS];
        long[] dst = new long[ReduceKernels.MAX_INPUTS];
        long[] bytes = new long[ReduceKernels.MAX_INPUTS];
        int n = 0;
        int j = i;
        while (j < steps.size() && steps.get(j) instanceof Step.CopyFrom cf
            && n < ReduceKernels.MAX_INPUTS) {
          long o = cf.offset() * es;
          src[n] = (cf.buf() == Buf.INPUT ? input : output)[local.applyAsInt(cf.peer())] + o;
          dst[n] = output[rank] + o;
          bytes[n] = cf.count() * es;
          n++;
          j++;
        }
        int segments = n;
        ops.add((base, parity, deadline) -> copies.copy(src, dst, bytes, segments, stream));
        i = j - 1;
      } else {
        throw new IllegalArgumentException("rank " + rank + ": " + algo + " has " + s + " among "
            + "its device steps; message and staging steps run through the host stage");
      }
    }
    return new Program(plan, op, ops.toArray(new Op[0]));
  }

  private void requireHalfSteps(Plan plan, Step s) {
    if (memory.barriersOnly()) {
      throw new IllegalArgumentException("rank " + rank + ": " + plan.algorithm() + " has a "
          + "lone " + s + ", and flag synchronisation runs whole barriers only");
    }
  }

  /** Enqueue {@code program} as collective {@code sequence}; returns without waiting for it. */
  void run(Program program, long sequence, long deadline) {
    long base = sequence * PlanRunner.PHASES;
    int parity = (int) (sequence & 1);
    for (Op op : program.ops) {
      if (FaultInjection.ON) { // the fault suite's hook; a constant false otherwise
        FaultInjection.at("intra", rank, sequence);
      }
      op.run(base, parity, deadline);
    }
  }

  @Override
  public String toString() {
    return "DevicePlanRunner[rank " + rank + ", inputs " + Arrays.toString(input) + "]";
  }
}
