package io.treeline.gpu;

import io.treeline.conf.TreelineEnv;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemsetD32;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.kernels.DevicePointers;
import io.treeline.launch.ProcessLauncher;
import io.treeline.plan.Algorithm;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import jcuda.Pointer;

/**
 * The GPU allreduce benchmark in the format of nccl-tests' {@code all_reduce_perf}, f32 sum on
 * the registered buffers: for k = each of {@code --ranks}, k processes (one JVM per rank) on
 * this machine's GPUs ({@code --gpus 1}: all on GPU 0, IPC events; {@code --gpus k}: rank r on
 * GPU r, flag barriers), per size and algorithm the time per call, algbw, busbw (algbw x
 * 2(k-1)/k) and #wrong (checked against the exact sum). Prints the table, appends CSV rows,
 * and prints the size where the cost model switches from one-shot to two-shot.
 *
 * <pre>
 * java -cp ... io.treeline.gpu.DeviceBench --ranks 2,4,8 --algo oneshot,twoshot,auto \
 *     -b 8 -e 1G -f 4 --csv out/bench-device.csv
 * </pre>
 */
public final class DeviceBench {
  private DeviceBench() {
  }

  public static void main(String[] argv) throws Exception {
    System.exit(run(argv));
  }

  /** Runs the benchmark (the ranks as processes or threads); 0 when every rank succeeded. */
  public static int run(String[] argv) throws Exception {
    Map<String, String> a = parse(argv);
    if (a.containsKey("rank-mode")) {
      rank(a);
      return 0;
    }
    int gpus = Integer.parseInt(a.getOrDefault("gpus", "1"));
    boolean threads = a.getOrDefault("threads", "0").equals("1");
    for (String k : a.getOrDefault("ranks", "2,4,8").split(",")) {
      int n = Integer.parseInt(k.trim());
      if (threads) {
        inThreads(n, a);
        continue;
      }
      List<String> args = new ArrayList<>(List.of(DeviceBench.class.getName(), "--rank-mode",
          "1"));
      for (Map.Entry<String, String> e : a.entrySet()) {
        args.add("--" + e.getKey());
        args.add(e.getValue());
      }
      int nodes = Integer.parseInt(a.getOrDefault("nodes", "1"));
      if (n % nodes != 0) {
        throw new IllegalArgumentException(n + " ranks do not split evenly over " + nodes
            + " nodes");
      }
      int[] perNode = new int[nodes];
      java.util.Arrays.fill(perNode, n / nodes);
      List<ProcessLauncher.Result> res = ProcessLauncher.run(perNode,
          List.of("-Xmx512m", "-XX:+UseSerialGC"), args, Map.of(TreelineEnv.GPUS.key(),
              Integer.toString(gpus)), Duration.ofSeconds(Long.parseLong(a.getOrDefault(
                  "timeout", "580"))), System.out, 0);
      for (ProcessLauncher.Result r : res) {
        if (r.exitCode() != 0) {
          System.out.println("rank " + r.rank() + " exited " + r.exitCode() + ":\n" + r.output());
          return 1;
        }
      }
    }
    return 0;
  }

  private static Map<String, String> parse(String[] argv) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      String k = argv[i].replaceFirst("^--?", "");
      k = switch (k) {
        case "b" -> "min-bytes";
        case "e" -> "max-bytes";
        case "f" -> "factor";
        case "n" -> "iters";
        case "w" -> "warmup";
        default -> k;
      };
      m.put(k, argv[i + 1]);
    }
    return m;
  }

  static long bytes(String s) {
    s = s.trim().toUpperCase();
    long mul = 1;
    if (s.endsWith("K")) {
      mul = 1L << 10;
    } else if (s.endsWith("M")) {
      mul = 1L << 20;
    } else if (s.endsWith("G")) {
      mul = 1L << 30;
    }
    if (mul > 1) {
      s = s.substring(0, s.length() - 1);
    }
    return Long.parseLong(s) * mul;
  }

  /** k ranks as threads of this JVM: one context, shared addresses, no IPC. */
  private static void inThreads(int k, Map<String, String> a) throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    byte[] secret = ("bench-" + System.nanoTime()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    java.util.List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
    Thread[] ts = new Thread[k];
    for (int r = 0; r < k; r++) {
      int rank = r;
      ts[r] = new Thread(() -> {
        try (TcpStoreBootstrap boot = TcpStoreBootstrap.create(rank, k, "127.0.0.1", port,
            secret, Duration.ofSeconds(120))) {
          body(boot, a, 1, "threads");
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "bench-rank-" + r);
      ts[r].start();
    }
    for (Thread t : ts) {
      t.join();
    }
    if (!errors.isEmpty()) {
      throw new IllegalStateException(errors.size() + " ranks failed: " + errors.get(0),
          errors.get(0));
    }
  }

  private static void rank(Map<String, String> a) throws IOException {
    int gpus = Integer.parseInt(java.util.Objects.requireNonNullElse(TreelineEnv.GPUS.get(), "1"));
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(120))) {
      body(boot, a, gpus, "processes");
    }
    System.exit(0);
  }

  private static void body(TcpStoreBootstrap boot, Map<String, String> a, int gpus,
      String what) throws IOException {
    long minBytes = bytes(a.getOrDefault("min-bytes", "8"));
    long maxBytes = bytes(a.getOrDefault("max-bytes", "1G"));
    long factor = Long.parseLong(a.getOrDefault("factor", "4"));
    int iters = Integer.parseInt(a.getOrDefault("iters", "50"));
    int warmup = Integer.parseInt(a.getOrDefault("warmup", "10"));
    String[] algos = a.getOrDefault("algo", "oneshot,twoshot,auto").split(",");
    Path csv = Path.of(a.getOrDefault("csv", "bench-device.csv"));
    {
      int ordinal = gpus <= 1 ? 0 : boot.rank() % gpus;
      long buffer = Math.max(256, (maxBytes + 255) / 256 * 256);
      DeviceOptions opts = DeviceOptions.DEFAULT.withOrdinal(ordinal).withBufferBytes(buffer);
      try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT
          .withTimeout(Duration.ofSeconds(120)), opts)) {
        int k = c.size();
        String mode = c.nodeCount() > 1 ? what + "-" + c.nodeCount() + "nodes" : what;
        boolean lead = c.rank() == 0;
        cuMemsetD32(DevicePointers.at(c.input()), Float.floatToIntBits(c.rank() + 1f),
            buffer / 4);
        float expect = k * (k + 1) / 2f;
        if (lead) {
          System.out.printf("# Treeline GPU allreduce, %d ranks (%s) on %d node(s), %s, sync "
              + "%s, f32 sum, %d iterations, %d warm-up%n", k, what, c.nodeCount(),
              gpus <= 1 ? "one GPU" : gpus + " GPUs", c.sync(), iters, warmup);
          System.out.printf("%12s %12s %8s %10s %9s %9s %7s%n", "size(B)", "count", "algo",
              "time(us)", "algbw", "busbw", "#wrong");
          if (!Files.exists(csv)) {
            Files.createDirectories(csv.toAbsolutePath().getParent());
            Files.writeString(csv, "ranks,mode,gpus,sync,bytes,algo,chosen,time_us,algbw_gbps,"
                + "busbw_gbps,wrong\n");
          }
        }
        long crossover = -1;
        for (long bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
          long count = Math.max(1, bytes / 4);
          if (crossover < 0 && c.select(count * 4) != Algorithm.ONESHOT) {
            crossover = count * 4;
          }
          for (String name : algos) {
            Algorithm al = name.equals("auto") ? null : Algorithm.parse(name);
            String chosen = (al != null ? al : c.select(count * 4)).id();
            int n = bytes >= (256L << 20) ? Math.max(5, iters / 5) : iters;
            for (int i = 0; i < warmup; i++) {
              c.allReduce(count, DataType.F32, ReduceOp.SUM, al);
            }
            c.synchronize();
            boot.barrier(Duration.ofSeconds(120));
            cuCtxSetCurrent(c.context());
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
              c.allReduce(count, DataType.F32, ReduceOp.SUM, al);
            }
            c.synchronize();
            double us = (System.nanoTime() - t0) / 1e3 / n;
            long wrong = check(c, count, expect);
            double algbw = count * 4 / us / 1e3;
            double busbw = algbw * 2.0 * (k - 1) / k;
            if (lead) {
              System.out.printf("%12d %12d %8s %10.1f %9.2f %9.2f %7d%n", count * 4, count,
                  name.equals("auto") ? "auto:" + chosen : name, us, algbw, busbw, wrong);
              Files.writeString(csv, k + "," + mode + "," + gpus + "," + c.sync() + "," + count * 4 + ","
                  + name + "," + chosen + "," + us + "," + algbw + "," + busbw + "," + wrong
                  + "\n", StandardOpenOption.APPEND);
            }
          }
        }
        if (lead && c.nodeCount() == 1) {
          System.out.println("# cost model: one-shot below " + (crossover < 0 ? "every size"
              : crossover + " bytes") + ", two-shot from there (" + k + " ranks)");
        }
      }
    }
  }

  /** Elements of the OUTPUT (first and last up to 1 Mi of them) that differ from the sum. */
  private static long check(DeviceCommunicator c, long count, float expect) {
    int window = (int) Math.min(count, 1 << 20);
    float[] h = new float[window];
    long wrong = 0;
    for (long start : new long[] {0, count - window}) {
      cuMemcpyDtoH(Pointer.to(h), DevicePointers.at(c.output() + start * 4), window * 4L);
      for (float v : h) {
        if (v != expect) {
          wrong++;
        }
      }
      if (count == window) {
        break;
      }
    }
    return wrong;
  }
}
