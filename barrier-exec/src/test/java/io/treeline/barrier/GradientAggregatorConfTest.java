package io.treeline.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.conf.TreelineConf;
import io.treeline.core.Communicator;
import java.util.Random;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.junit.jupiter.api.Test;

/**
 * The bucket size comes from {@code spark.treeline.bucketBytes} unless the caller gives one:
 * the key's default outside Spark, the running application's value inside it.
 */
class GradientAggregatorConfTest {
  /** Three gradients of 2400 bytes: one bucket at 25 MiB, three at 4 KiB. */
  private static int buckets(GradientAggregator agg, Random rnd) {
    for (int g = 0; g < 3; g++) {
      float[] grad = new float[600];
      for (int i = 0; i < grad.length; i++) {
        grad[i] = (float) rnd.nextGaussian();
      }
      agg.register(grad);
    }
    return agg.buckets();
  }

  @Test
  void theBucketSizeFollowsTheKeyUnlessGivenAndForTaskNeedsABarrierTask() {
    HostCommunicator[] one = HostCommunicator.inProcess(CommConfig.DEFAULT, 1);
    Communicator comm = one[0];
    Random rnd = new Random(11);
    try {
      assertEquals(null, SparkEnv.get(), "a SparkContext of another test is still running");
      GradientAggregator outside = new GradientAggregator(comm);
      assertEquals(TreelineConf.BUCKET_BYTES.defaultValue(), outside.bucketBytes());
      assertEquals(1, buckets(outside, rnd));

      SparkContext sc = new SparkContext(new SparkConf().setMaster("local[1]")
          .setAppName("bucket-bytes").set("spark.ui.enabled", "false")
          .set("spark.treeline.bucketBytes", "4k"));
      try {
        GradientAggregator fromConf = new GradientAggregator(comm);
        assertEquals(4096, fromConf.bucketBytes());
        assertEquals(3, buckets(fromConf, rnd));
        GradientAggregator given = new GradientAggregator(comm, 1 << 20);
        assertEquals(1 << 20, given.bucketBytes());
        assertEquals(1, buckets(given, rnd));
        IllegalStateException e = assertThrows(IllegalStateException.class,
            GradientAggregator::forTask);
        assertTrue(e.getMessage().contains("barrier stage"), e.getMessage());
      } finally {
        sc.stop();
      }
      assertThrows(IllegalArgumentException.class, () -> new GradientAggregator(comm, 1000));
    } finally {
      one[0].close();
    }
  }
}
