package io.treeline.it

import io.treeline.barrier.{BarrierJobs, GradientAggregator, Treeline}
import io.treeline.core.{Communicator, DataType, ReduceOp}
import org.apache.spark.{SparkConf, SparkContext}
import org.junit.jupiter.api.Assertions.{assertArrayEquals, assertEquals, assertTrue}
import org.junit.jupiter.api.Test
import scala.jdk.CollectionConverters._

/**
 * The user API from Scala 2.13, as a Spark user writes it: a barrier stage with
 * `rdd.barrier().mapPartitions`, the task's communicator on `Array[Float]`, `Array[Double]` and
 * `Array[Int]`, a slice after a reduce-scatter, a `GradientAggregator` sized by the conf, and
 * `BarrierJobs.collect` with a Scala lambda; every result against a reference computed here.
 */
class ScalaApiTest {
  import ScalaApiTest._

  @Test
  def collectivesSlicesAndGradientAggregatorReadAsScalaInABarrierStage(): Unit = {
    val conf = new SparkConf().setMaster(s"local[$Ranks]").setAppName("treeline-scala")
      .set("spark.plugins", "io.treeline.spark.TreelinePlugin")
      .set("spark.ui.enabled", "false")
      .set("spark.treeline.bucketBytes", "4k")
    val sc = new SparkContext(conf)
    try {
      val dim = Dim
      val reports = sc.parallelize(0 until Ranks, Ranks).barrier().mapPartitions { _ =>
        val comm: Communicator = Treeline.communicator()
        val r = comm.rank()
        val summed = Array.tabulate(dim)(i => value(r, i))
        comm.allReduce(summed, ReduceOp.SUM)                   // in place, whole array
        val weights = Array.fill(dim)(r + 0.5)
        comm.broadcast(weights, 1)                             // rank 1's, everywhere
        val ints = Array.tabulate(dim)(i => r * 1000 + i)
        val scattered = new Array[Int](dim)
        comm.reduceScatter(ints, 0, scattered, 0, dim, ReduceOp.SUM)
        val s = comm.slice(dim.toLong, DataType.I32)
        Iterator(Report(r, summed, weights, s.lo, scattered.slice(s.lo.toInt, s.hi.toInt)))
      }.collect().sortBy(_.rank)

      assertEquals(Ranks, reports.length)
      var next = 0L
      for (rep <- reports) {
        for (i <- 0 until dim) {
          val ref = (0 until Ranks).map(k => value(k, i).toDouble).sum
          assertEquals(ref, rep.summed(i).toDouble, 1e-5 * (1 + math.abs(ref)),
            s"rank ${rep.rank} allReduce element $i")
        }
        assertTrue(rep.weights.forall(_ == 1.5), s"rank ${rep.rank} broadcast")
        assertEquals(next, rep.sliceLo, s"rank ${rep.rank}'s slice starts where the last ended")
        for ((got, j) <- rep.mine.zipWithIndex) {
          val i = rep.sliceLo + j
          assertEquals((0 until Ranks).map(k => k * 1000 + i).sum, got.toLong,
            s"rank ${rep.rank} reduce-scatter element $i")
        }
        next = rep.sliceLo + rep.mine.length
      }
      assertEquals(dim.toLong, next, "the slices cover the message")

      val averaged = BarrierJobs.collect(sc.parallelize(0 until Ranks, Ranks).toJavaRDD(),
        (partition: Int, _: java.util.Iterator[Int]) => {
          val grad = Array.tabulate(dim)(i => value(partition, i))
          val bias = Array.tabulate(7)(i => value(partition, dim + i))
          val agg = new GradientAggregator(Treeline.communicator()) // spark.treeline.bucketBytes
          agg.register(grad)
          agg.register(bias)
          agg.allReduce()
          agg.close()
          Iterator((agg.bucketBytes(), agg.buckets(), grad ++ bias)).asJava
        }).asScala.toList
      assertEquals(Ranks, averaged.size)
      for ((bucketBytes, buckets, g) <- averaged) {
        assertEquals(4096L, bucketBytes)
        assertEquals(2, buckets, "4 KiB buckets: the 4124-byte gradient and the bias apart")
        val ref = Array.tabulate(dim + 7)(i =>
          ((0 until Ranks).map(k => value(k, i).toDouble).sum / Ranks).toFloat)
        assertArrayEquals(ref, g, 1e-5f)
      }
    } finally {
      sc.stop()
    }
  }
}

object ScalaApiTest {
  val Ranks = 3
  /** A prime: the slices are uneven, and a float gradient is just over 4 KiB. */
  val Dim = 1031

  /** Random, never 0, the same on every rank and here. */
  def value(rank: Int, i: Int): Float =
    (new java.util.Random(rank * 100003L + i).nextGaussian() + 3).toFloat

  final case class Report(rank: Int, summed: Array[Float], weights: Array[Double],
      sliceLo: Long, mine: Array[Int])
}
