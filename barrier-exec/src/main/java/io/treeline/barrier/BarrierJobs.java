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

  /** A per-partition function that Java lambdas implement; it must be serializable. */
  @FunctionalInterface
  public interface PartitionFunction<T, R> extends Serializable {
    Iterator<R> call(int partition, Iterator<T> rows) throws Exception;
  }

  /** {@code rdd.barrier().mapPartitions(f)} for Java callers. */
  public static <T, R> JavaRDD<R> mapPartitions(JavaRDD<T> rdd, PartitionFunction<T, R> f) {
    @SuppressWarnings("unchecked")
    ClassTag<R> tag = (ClassTag<R>) (ClassTag<?>) ClassTag$.MODULE$.AnyRef();
    Function1<scala.collection.Iterator<T>, scala.collection.Iterator<R>> fn = new Apply<>(f);
    RDD<R> out = rdd.rdd().barrier().mapPartitions(fn, false, tag);
    return JavaRDD.fromRDD(out, tag);
  }

  /** Runs {@code f} on every partition in one barrier stage; results in partition order. */
  public static <T, R> List<R> collect(JavaRDD<T> rdd, PartitionFunction<T, R> f) {
    JavaRDD<Tuple2<Integer, R>> tagged = mapPartitions(rdd, (p, it) -> {
      Iterator<R> r = f.call(p, it);
      List<Tuple2<Integer, R>> out = new ArrayList<>();
      while (r.hasNext()) {
        out.add(new Tuple2<>(p, r.next()));
      }
      return out.iterator();
    });
    List<Tuple2<Integer, R>> all = tagged.repartition(1).collect();
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
