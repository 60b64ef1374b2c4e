package io.treeline.barrier;

import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.treeline.bootstrap.Bootstrap;
import io.treeline.bootstrap.BootstrapException;
import io.treeline.bootstrap.NodeIdentity;
import io.treeline.conf.TreelineConf;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.SparkEnv;

/**
 * A {@link Bootstrap} over Spark's {@code BarrierTaskContext.allGather}: rank = partition id,
 * size = number of barrier tasks. Each payload travels as Base64 of a Kryo-written envelope
 * (rank, bytes), as Spark's allGather carries strings.
 *
 * <p>The job secret is Spark's own authentication secret when {@code spark.authenticate} is on;
 * otherwise rank 0 draws one and the first all-gather spreads it (it then travels over Spark's
 * RPC, encrypted when {@code spark.network.crypto.enabled} is on). With
 * {@code spark.treeline.test.ranksPerNode} set, task p is placed on simulated node p / n.
 */
final class BarrierBootstrap implements Bootstrap {
  private final BarrierTaskContext ctx;
  private final int rank;
  private final int size;
  private final String nodeId;
  private final ExecutorService caller;
  private byte[] secret;
  private int round;

  private BarrierBootstrap(BarrierTaskContext ctx, TreelineConf conf) {
    this.ctx = ctx;
    this.rank = ctx.partitionId();
    this.size = ctx.getTaskInfos().length;
    int perNode = conf.get(TreelineConf.TEST_RANKS_PER_NODE);
    this.nodeId = perNode > 0 ? "sim-node-" + rank / perNode : NodeIdentity.local();
    this.caller = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "treeline-barrier-" + rank);
      t.setDaemon(true);
      return t;
    });
  }

  /** Inside a barrier task: agree on the secret (one all-gather unless Spark provides it). */
  static BarrierBootstrap create(BarrierTaskContext ctx, TreelineConf conf) {
    BarrierBootstrap b = new BarrierBootstrap(ctx, conf);
    try {
      SparkEnv env = SparkEnv.get();
      if (env != null && env.conf().getBoolean("spark.authenticate", false)) {
        b.secret = env.securityManager().getSecretKey().getBytes(StandardCharsets.UTF_8);
      } else {
        byte[] mine = new byte[0];
        if (b.rank == 0) {
          mine = new byte[32];
          new SecureRandom().nextBytes(mine);
        }
        b.secret = b.allGather(mine, conf.get(TreelineConf.TIMEOUT))[0];
      }
      return b;
    } catch (RuntimeException e) {
      b.close();
      throw e;
    }
  }

  @Override
  public int rank() {
    return rank;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public String nodeId() {
    return nodeId;
  }

  @Override
  public byte[] secret() {
    return secret.clone();
  }

  @Override
  public byte[][] allGather(byte[] mine, Duration timeout) {
    int r = ++round;
    Output out = new Output(16 + mine.length, -1);
    out.writeInt(rank);
    out.writeInt(mine.length);
    out.writeBytes(mine);
    String msg = Base64.getEncoder().encodeToString(out.toBytes());
    // BarrierTaskContext.allGather waits up to spark.barrier.sync.timeout (a year by default):
    // call it on a helper thread and give up at our own timeout
    Future<String[]> f = caller.submit(() -> ctx.allGather(msg));
    String[] all;
    try {
      all = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new BootstrapException("rank " + rank + ", barrier all-gather #" + r + ": timed out "
          + "after " + timeout.toMillis() + " ms waiting for the other barrier tasks "
          + "(spark.treeline.timeout)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new BootstrapException("rank " + rank + ": interrupted in barrier all-gather #" + r,
          e);
    } catch (ExecutionException e) {
      throw new BootstrapException("rank " + rank + ", barrier all-gather #" + r + ": "
          + e.getCause(), e.getCause());
    }
    if (all.length != size) {
      throw new BootstrapException("rank " + rank + ": barrier all-gather #" + r + " returned "
          + all.length + " messages for " + size + " tasks");
    }
    byte[][] parts = new byte[size][];
    for (int i = 0; i < size; i++) {
      Input in = new Input(Base64.getDecoder().decode(all[i]));
      int from = in.readInt();
      int len = in.readInt();
      if (from != i || len < 0) {
        throw new BootstrapException("rank " + rank + ": barrier all-gather #" + r + " slot " + i
            + " holds rank " + from + "'s message");
      }
      parts[i] = in.readBytes(len);
    }
    return parts;
  }

  @Override
  public void close() {
    caller.shutdownNow();
  }
}
