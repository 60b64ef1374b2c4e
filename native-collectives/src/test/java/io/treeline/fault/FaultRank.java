package io.treeline.fault;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CollectiveCheck;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.FaultInjection;
import io.treeline.testing.Elements;
import java.nio.ByteBuffer;
import java.time.Duration;

/**
 * One rank of the fault suite ({@link FaultSuiteTest}), started by the launcher with the fault,
 * if any, in {@code -Dtreeline.test.fault}: joins the store, sets up a communicator with the
 * given timeout, and runs {@code calls} allreduces of random f32 data checked against a float64
 * reference. Prints {@code FAULT-RANK pid=...} first, then {@code FAULT-NONE} (every call right)
 * or {@code FAULT-DETECTED t=<epoch ms> ...} with the exception's message on one line, and
 * exits 0 either way: the test reads what each rank saw.
 *
 * <p>Besides the hook's own actions, {@code action=leave} makes the faulty rank close its
 * communicator and exit 1 before call {@code call}, as a task whose code failed outside a
 * collective does.
 *
 * <p>{@code main(timeoutMillis, calls)}.
 */
public final class FaultRank {
  private FaultRank() {
  }

  public static void main(String[] args) {
    long pid = ProcessHandle.current().pid();
    System.out.println("FAULT-RANK pid=" + pid);
    System.out.flush();
    Duration timeout = Duration.ofMillis(Long.parseLong(args[0]));
    int calls = Integer.parseInt(args[1]);
    String spec = System.getProperty(FaultInjection.PROPERTY, "");
    int leaveBefore = spec.contains("action=leave") ? Integer.parseInt(field(spec, "call")) : -1;
    int leaver = spec.contains("action=leave") ? Integer.parseInt(field(spec, "rank")) : -1;
    int code = 0;
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(timeout);
        HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT.withTimeout(timeout))) {
      for (int call = 1; call <= calls; call++) {
        if (call == leaveBefore && boot.rank() == leaver) {
          System.out.println("FAULT-INJECTED leave before call #" + call + " on rank "
              + boot.rank() + " t=" + System.currentTimeMillis());
          code = 1;
          break;
        }
        // odd sizes, a new one each call, from 64 KiB of f32 (call 2: 17405): across nodes every
        // rank and both trees carry it, so a fault at the network fires on any rank (below the
        // network grain, one rank of a node does all of the network's work)
        long n = 16381 + 512 * call;
        ByteBuffer in = Elements.direct(n, DataType.F32);
        for (int i = 0; i < n; i++) {
          Elements.put(in, i, CollectiveCheck.value(call, boot.rank(), i, DataType.F32,
              ReduceOp.SUM), DataType.F32);
        }
        ByteBuffer out = Elements.direct(n, DataType.F32);
        c.allReduce(in, out, n, DataType.F32, ReduceOp.SUM);
        double[][] col = new double[boot.size()][1];
        for (int i = 0; i < n; i++) {
          for (int r = 0; r < boot.size(); r++) {
            col[r][0] = CollectiveCheck.value(call, r, i, DataType.F32, ReduceOp.SUM);
          }
          CollectiveCheck.check(boot.rank(), "call " + call, col, out, i, DataType.F32,
              ReduceOp.SUM);
        }
      }
      if (code == 0) {
        System.out.println("FAULT-NONE " + calls + " calls right");
      }
    } catch (RuntimeException e) {
      System.out.println("FAULT-DETECTED t=" + System.currentTimeMillis() + " "
          + e.getClass().getSimpleName() + ": " + e.getMessage().replace('\n', '|'));
    }
    System.out.flush();
    System.exit(code);
  }

  private static String field(String spec, String key) {
    for (String kv : spec.split(",")) {
      if (kv.startsWith(key + "=")) {
        return kv.substring(key.length() + 1);
      }
    }
    throw new IllegalArgumentException(spec + " has no " + key);
  }
}
