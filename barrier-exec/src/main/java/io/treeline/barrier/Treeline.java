package io.treeline.barrier;

import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.conf.TreelineConf;
import io.treeline.core.Communicator;
import io.treeline.core.DeviceCommunicator;
import io.treeline.gpu.DeviceOptions;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.apache.spark.util.TaskFailureListener;
import scala.Tuple2;

/**
 * The entry point inside a barrier stage:
 * <pre>{@code
 * rdd.barrier().mapPartitions(it -> {
 *   Communicator comm = Treeline.communicator();
 *   comm.allReduce(grad, ReduceOp.AVG);               // float[] grad, averaged in place
 *   ...
 * })
 * }</pre>
 * The first call in a task sets the communicator up (a collective: every task of the stage must
 * call it); later calls in the same task return the same one. Its life is the task's: a task
 * completion or failure listener closes it, so that a failed attempt leaves no segment, socket
 * or thread behind and Spark's retry of the whole barrier stage starts clean.
 */
public final class Treeline {
  private static final ConcurrentHashMap<Long, Communicator> BY_TASK = new ConcurrentHashMap<>();
  private static final ConcurrentHashMap<Long, DeviceCommunicator> DEVICE_BY_TASK =
      new ConcurrentHashMap<>();

  private Treeline() {
  }

  /**
   * The task's communicator over host memory: shared memory among the tasks of one machine,
   * TCP across machines, settings from the {@code spark.treeline.*} keys. The first call in a
   * task sets it up (a collective: every task of the barrier stage must call it); later calls
   * in the task return the same one; the task's end closes it. Its {@link Communicator#rank()}
   * is the task's partition id.
   *
   * @return the task's communicator
   * @throws IllegalStateException outside a barrier stage task
   */
  public static Communicator communicator() {
    return perTask(BY_TASK, "communicator", (boot, conf, tc) -> HostCommunicator.create(boot,
        CommConfig.from(conf)));
  }

  /** How a communicator of one kind is made from the task's bootstrap and settings. */
  private interface Factory<C> {
    C create(BarrierBootstrap boot, TreelineConf conf, TaskContext tc);
  }

  /**
   * The task's communicator of one kind: made at the first call (a collective: every task of
   * the stage makes it), closed with its bootstrap when the task completes or fails.
   */
  private static <C extends AutoCloseable> C perTask(ConcurrentHashMap<Long, C> byTask,
      String what, Factory<C> factory) {
    TaskContext tc = TaskContext.get();
    if (!(tc instanceof BarrierTaskContext ctx)) {
      throw new IllegalStateException("Treeline." + what + "() must be called inside a barrier "
          + "stage task: rdd.barrier().mapPartitions(...) (from Java: rdd.rdd().barrier(), or "
          + "BarrierJobs.mapPartitions)");
    }
    long id = tc.taskAttemptId();
    C c = byTask.get(id);
    if (c != null) {
      return c;
    }
    TreelineConf conf = conf(SparkEnv.get().conf());
    BarrierBootstrap boot = BarrierBootstrap.create(ctx, conf);
    C created;
    try {
      created = factory.create(boot, conf, tc);
    } catch (RuntimeException e) {
      boot.close();
      throw e;
    }
    byTask.put(id, created);
    ctx.addTaskCompletionListener((TaskCompletionListener) t -> release(byTask, id, boot));
    ctx.addTaskFailureListener((TaskFailureListener) (t, e) -> release(byTask, id, boot));
    return created;
  }

  private static <C extends AutoCloseable> void release(ConcurrentHashMap<Long, C> byTask,
      long id, BarrierBootstrap boot) {
    C c = byTask.remove(id);
    try {
      if (c != null) {
        c.close();
      }
    } catch (Exception e) {
      throw new IllegalStateException("closing the task's communicator: " + e.getMessage(), e);
    } finally {
      boot.close();
    }
  }

  /**
   * The GPU path inside a barrier stage: a {@link DeviceCommunicator} (allreduce of device
   * memory, stream-ordered; its javadoc is the contract) on the GPU Spark gave
   * this task ({@code spark.task.resource.gpu.amount=1}; its address, an nvidia-smi index or a
   * UUID, is bound to this process's CUDA ordinal by {@link GpuBinding}: ranks are told apart
   * by GPU UUID, not by ordinal). Inside a node the ranks map each other's registered buffers through CUDA IPC; across
   * nodes slices cross through pinned host memory and TCP. Like {@link #communicator()}: the
   * first call sets it up (every task must call it), the task's end closes it. Where there is
   * no GPU, no CUDA driver or a jar built without nvcc, it fails at once saying which; use
   * {@link #communicator()} (host memory) there.
   *
   * @return the task's GPU communicator
   * @throws IllegalStateException outside a barrier stage task
   */
  public static DeviceCommunicator deviceCommunicator() {
    return perTask(DEVICE_BY_TASK, "deviceCommunicator", (boot, conf, tc) ->
        io.treeline.gpu.DeviceCommunicator.create(boot, CommConfig.from(conf),
            DeviceOptions.from(conf, gpuOrdinal(tc))));
  }

  /**
   * The CUDA ordinal of the GPU Spark assigned to this task ({@link GpuBinding}: by nvidia-smi
   * index or UUID, refusing an address this process cannot see), or 0 when none was assigned.
   */
  static int gpuOrdinal(TaskContext tc) {
    GpuBinding.Bound b = GpuBinding.forTask();
    // without a CUDA driver the ordinal is unknown; the device communicator then says why it
    // cannot start
    return b == null ? 0 : Math.max(0, b.cudaOrdinal());
  }

  /**
   * Communicators open in this JVM (tasks still running); for tests and metrics.
   *
   * @return host and GPU communicators not yet closed
   */
  public static int openCommunicators() {
    return BY_TASK.size() + DEVICE_BY_TASK.size();
  }

  /**
   * The {@code spark.treeline.*} settings of a Spark configuration, validated. Not user API: a
   * user sets the keys as strings on the {@code SparkConf} (docs/configuration.md, also in the
   * jar), the plugin checks them at start-up and {@link #communicator()} at set-up; the typed
   * view ({@code conf.TreelineConf}, its {@code ConfEntry}s) is the engine's own.
   */
  static TreelineConf conf(SparkConf sc) {
    Map<String, String> m = new HashMap<>();
    for (Tuple2<String, String> kv : sc.getAllWithPrefix(TreelineConf.PREFIX)) {
      m.put(TreelineConf.PREFIX + kv._1(), kv._2());
    }
    return new TreelineConf(m);
  }
}
