package io.treeline.barrier;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import scala.Function1;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Barrier stages from Java without Scala types: {@link #mapPartitions} runs a function per
 * partition with every task started together, {@link #collect} also returns the results in
 * partition order in a way that Spark can retry.
 *
 * <p>Spark retries a failed barrier stage as a whole only when it is a ShuffleMapStage, not
 * when it is the ResultStage of a job (XGBoost4J-Spark ends its training with
 * {@code repartition(1)} before {@code collect()} for this reason). {@link #collect} does the
 * same: the barrier stage feeds a shuffle, so a task failure (an executor lost, a peer's
 * collective failing) reruns all its tasks, each with a fresh communicator.
 */
public final class BarrierJobs {
  private BarrierJobs() {
  }

  /**
   * A per-partition function that Java lambdas implement; it must be serializable.
   *
   * @param <T> the input rows' type
   * @param <R> the results' type
   */
  @FunctionalInterface
  public interface PartitionFunction<T, R> extends Serializable {
    /**
     * Runs in the task of one partition, with every task of the stage started together.
     *
     * @param partition the partition's index (also the task's rank)
     * @param rows the partition's rows
     * @return the partition's results
     * @throws Exception anything; the task fails with it and Spark retries the stage
     */
    Iterator<R> call(int partition, Iterator<T> rows) throws Exception;
  }

  /**
   * {@code rdd.barrier().mapPartitions(f)} for Java callers; lazy like any transformation.
   *
   * @param rdd the input, one partition per rank
   * @param f the function run in each partition's task
   * @param <T> the input rows' type
   * @param <R> the results' type
   * @return the barrier stage's output
   */
  public static <T, R> JavaRDD<R> mapPartitions(JavaRDD<T> rdd, PartitionFunction<T, R> f) {
    @SuppressWarnings("unchecked")
    ClassTag<R> tag = (ClassTag<R>) (ClassTag<?>) ClassTag$.MODULE$.AnyRef();
    Function1<scala.collection.Iterator<T>, scala.collection.Iterator<R>> fn = new Apply<>(f);
    RDD<R> out = rdd.rdd().barrier().mapPartitions(fn, false, tag);
    return JavaRDD.fromRDD(out, tag);
  }

  /**
   * Runs {@code f} on every partition in one barrier stage and returns the results in
   * partition order (within a partition, in the order {@code f} returned them). A failed task
   * makes Spark rerun the whole stage, up to {@code spark.stage.maxConsecutiveAttempts} times.
   *
   * @param rdd the input, one partition per rank
   * @param f the function run in each partition's task
   * @param <T> the input rows' type
   * @param <R> the results' type
   * @return every partition's results
   * @throws BarrierStageException when the stage failed after Spark's retries (its cause is
   *     Spark's {@code SparkException}, whose message names the failing task's error)
   */
  public static <T, R> List<R> collect(JavaRDD<T> rdd, PartitionFunction<T, R> f) {
    JavaRDD<Tuple2<Integer, R>> tagged = mapPartitions(rdd, (p, it) -> {
      Iterator<R> r = f.call(p, it);
      List<Tuple2<Integer, R>> out = new ArrayList<>();
      while (r.hasNext()) {
        out.add(new Tuple2<>(p, r.next()));
      }
      return out.iterator();
    });
    List<Tuple2<Integer, R>> all;
    try {
      all = tagged.repartition(1).collect();
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) { // SparkException: checked, and thrown undeclared from Scala
      throw new BarrierStageException("the barrier stage failed after Spark's retries "
          + "(spark.stage.maxConsecutiveAttempts): " + e.getMessage(), e);
    }
    List<Tuple2<Integer, R>> sorted = new ArrayList<>(all);
    sorted.sort((a, b) -> Integer.compare(a._1(), b._1())); // stable: keeps order in a partition
    List<R> out = new ArrayList<>();
    for (Tuple2<Integer, R> t : sorted) {
      out.add(t._2());
    }
    return out;
  }

  private static final class Apply<T, R> extends scala.runtime.AbstractFunction1<
      scala.collection.Iterator<T>, scala.collection.Iterator<R>> implements Serializable {
    private final PartitionFunction<T, R> f;

    Apply(PartitionFunction<T, R> f) {
      this.f = f;
    }

    @Override
    public scala.collection.Iterator<R> apply(scala.collection.Iterator<T> it) {
      int p = org.apache.spark.TaskContext.getPartitionId();
      try {
        return CollectionConverters.asScala(f.call(p, CollectionConverters.asJava(it)));
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new RuntimeException("partition " + p + ": " + e, e);
      }
    }
  }
}
