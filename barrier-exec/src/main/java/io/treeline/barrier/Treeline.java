package io.treeline.barrier;

import io.treeline.comm.Communicator;
import io.treeline.conf.TreelineConf;
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
 *   comm.allReduce(grad, grad, n, DataType.F32, ReduceOp.AVG);
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

  private Treeline() {
  }

  public static Communicator communicator() {
    TaskContext tc = TaskContext.get();
    if (!(tc instanceof BarrierTaskContext ctx)) {
      throw new IllegalStateException("Treeline.communicator() must be called inside a barrier "
          + "stage task: rdd.barrier().mapPartitions(...) (from Java: rdd.rdd().barrier(), or "
          + "BarrierJobs.mapPartitions)");
    }
    long id = tc.taskAttemptId();
    Communicator c = BY_TASK.get(id);
    if (c != null) {
      return c;
    }
    TreelineConf conf = conf(SparkEnv.get().conf());
    BarrierBootstrap boot = BarrierBootstrap.create(ctx, conf);
    Communicator created;
    try {
      created = Communicator.create(boot, conf.commConfig());
    } catch (RuntimeException e) {
      boot.close();
      throw e;
    }
    BY_TASK.put(id, created);
    ctx.addTaskCompletionListener((TaskCompletionListener) t -> release(id, boot));
    ctx.addTaskFailureListener((TaskFailureListener) (t, e) -> release(id, boot));
    return created;
  }

  /** Communicators open in this JVM (tasks still running); for tests and metrics. */
  public static int openCommunicators() {
    return BY_TASK.size();
  }

  private static void release(long id, BarrierBootstrap boot) {
    Communicator c = BY_TASK.remove(id);
    if (c != null) {
      c.close();
    }
    boot.close();
  }

  /** The {@code spark.treeline.*} settings of a Spark configuration, validated. */
  public static TreelineConf conf(SparkConf sc) {
    Map<String, String> m = new HashMap<>();
    for (Tuple2<String, String> kv : sc.getAllWithPrefix(TreelineConf.PREFIX)) {
      m.put(TreelineConf.PREFIX + kv._1(), kv._2());
    }
    return new TreelineConf(m);
  }
}
