package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuIpcCloseMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcGetMemHandle;
import static jcuda.driver.JCudaDriver.cuIpcOpenMemHandle;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUipcMemHandle;
import jcuda.driver.CUipcMem_flags;

/**
 * Which GPU pairs can really open each other's CUDA IPC memory handles. Asked, not assumed:
 * containers, cgroups and driver settings can forbid what {@code cuDeviceCanAccessPeer}
 * allows, and the failure would otherwise surface in the middle of the first allreduce.
 *
 * <p>A handle cannot be opened in the process that exported it, so the probe takes two JVMs.
 * This one (the owner) allocates a small buffer on every GPU, writes a pattern that names the
 * GPU, and exports an IPC handle for each. A child JVM (same runtime, same class path) then, for
 * every opener GPU j and owner GPU i, opens i's handle in j's primary context with
 * {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}, reads 16 bytes back, checks the pattern and closes
 * the mapping. The handles travel to the child's stdin as hex (64 bytes each, read and written
 * through {@link IpcHandles}); the child reports one line per pair on its stdout:
 *
 * <pre>
 *   begin I J                  about to open owner I's handle on opener J
 *   ok I J
 *   fail I J PHASE: MESSAGE    PHASE = context | open | copy | verify | close
 *   unavailable REASON         the child has no driver (then nothing else)
 * </pre>
 *
 * Both sides are bounded: the owner kills the child at the deadline and names the pair it was
 * opening, and the child halts itself shortly after the same deadline should the owner be gone.
 * The owner frees its buffers and releases its contexts whatever happened.
 */
public final class IpcOpenProbe {
  static final long BUFFER_BYTES = 1 << 20;
  static final int CHECK_BYTES = 16;

  private IpcOpenProbe() {
  }

  /**
   * {@code open[i][j]}: opener GPU j read owner GPU i's buffer through its IPC handle and saw
   * the pattern; {@code error[i][j]} says why not (null where open). {@code unavailable} is set,
   * and the matrices are empty, when there was nothing to probe (no driver, no device).
   */
  public record Result(int gpus, boolean[][] open, String[][] error, String unavailable) {
    public static Result unavailable(String why) {
      return new Result(0, new boolean[0][0], new String[0][0], why);
    }
  }

  /** Probes every (owner, opener) pair of this process's GPUs; never throws for GPU trouble. */
  public static Result probe(Duration timeout) {
    String why = GpuDevices.initDriver();
    if (why != null) {
      return Result.unavailable(why);
    }
    int n;
    try {
      int[] count = new int[1];
      cuDeviceGetCount(count);
      n = count[0];
    } catch (CudaException e) {
      return Result.unavailable("cuDeviceGetCount failed: " + e.getMessage());
    }
    if (n == 0) {
      return Result.unavailable("the CUDA driver sees no device");
    }
    String[][] error = new String[n][n];
    String[] handles = new String[n];
    CUdevice[] devices = new CUdevice[n];
    CUcontext[] contexts = new CUcontext[n];
    CUdeviceptr[] buffers = new CUdeviceptr[n];
    try {
      for (int i = 0; i < n; i++) {
        try {
          handles[i] = export(i, devices, contexts, buffers);
        } catch (CudaException e) {
          Arrays.fill(error[i], "owner GPU " + i + " could not export an IPC handle (alloc, "
              + "write or cuIpcGetMemHandle): " + e.getMessage());
        }
      }
      List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java")
          .toString(), "-cp", System.getProperty("java.class.path"),
          IpcOpenProbe.class.getName(), "--child", Long.toString(timeout.toMillis()));
      return runChild(cmd, handles, error, timeout);
    } finally {
      release(devices, contexts, buffers);
    }
  }

  private static String export(int i, CUdevice[] devices, CUcontext[] contexts,
      CUdeviceptr[] buffers) {
    CUdevice d = new CUdevice();
    cuDeviceGet(d, i);
    CUcontext ctx = new CUcontext();
    cuDevicePrimaryCtxRetain(ctx, d);
    devices[i] = d;
    contexts[i] = ctx;
    cuCtxSetCurrent(ctx);
    CUdeviceptr p = new CUdeviceptr();
    cuMemAlloc(p, BUFFER_BYTES);
    buffers[i] = p;
    cuMemcpyHtoD(p, Pointer.to(pattern(i)), CHECK_BYTES);
    cuCtxSynchronize();
    CUipcMemHandle h = new CUipcMemHandle();
    cuIpcGetMemHandle(h, p);
    return HexFormat.of().formatHex(IpcHandles.bytes(h));
  }

  private static void release(CUdevice[] devices, CUcontext[] contexts,
      CUdeviceptr[] buffers) {
    for (int i = 0; i < devices.length; i++) {
      if (devices[i] == null) {
        continue;
      }
      try {
        if (buffers[i] != null) {
          cuCtxSetCurrent(contexts[i]);
          cuMemFree(buffers[i]);
        }
        cuDevicePrimaryCtxRelease(devices[i]);
      } catch (CudaException e) {
        System.err.println("IPC probe: releasing GPU " + i + "'s buffer failed: "
            + e.getMessage());
      }
    }
  }

  /**
   * Starts the child, feeds it the handles ("-" for an owner that could not export), and turns
   * its report into the matrix. Package-visible so a test can run it on a child command that
   * misbehaves.
   */
  static Result runChild(List<String> cmd, String[] handles, String[][] error,
      Duration timeout) {
    int n = handles.length;
    boolean[][] open = new boolean[n][n];
    Process p;
    try {
      p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    } catch (IOException e) {
      return fill(open, error, "could not start the probe's child JVM (" + cmd.get(0) + "): "
          + e.getMessage());
    }
    List<String> lines = new ArrayList<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String l; (l = r.readLine()) != null; ) {
          synchronized (lines) {
            lines.add(l);
          }
        }
      } catch (IOException e) {
        // the child was killed: what it said so far is in lines
      }
    }, "ipc-probe-child-output");
    reader.setDaemon(true);
    reader.start();
    boolean finished;
    try (Writer w = new OutputStreamWriter(p.getOutputStream(), StandardCharsets.UTF_8)) {
      w.write(n + "\n");
      for (String h : handles) {
        w.write((h == null ? "-" : h) + "\n");
      }
    } catch (IOException e) {
      // the child died before reading: its output says why
    }
    try {
      finished = p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (!finished) {
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
      }
      reader.join(5_000);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      return fill(open, error, "interrupted while waiting for the probe's child JVM");
    }
    List<String> said;
    synchronized (lines) {
      said = List.copyOf(lines);
    }
    return parse(said, open, error, finished, finished ? p.exitValue() : -1, timeout);
  }

  /** Reads the child's lines into the matrices; pairs it never answered get the reason. */
  static Result parse(List<String> said, boolean[][] open, String[][] error, boolean finished,
      int exit, Duration timeout) {
    int n = open.length;
    boolean[][] answered = new boolean[n][n];
    int[] pending = null;
    List<String> other = new ArrayList<>();
    for (String l : said) {
      String[] t = l.split(" ", 4);
      if (t[0].equals("unavailable")) {
        return fill(open, error, "the probe's child JVM has no usable driver: "
            + l.substring("unavailable ".length()));
      }
      if (t.length >= 3 && (t[0].equals("begin") || t[0].equals("ok") || t[0].equals("fail"))
          && t[1].matches("\\d+") && t[2].matches("\\d+")) {
        int i = Integer.parseInt(t[1]);
        int j = Integer.parseInt(t[2]);
        if (i >= n || j >= n) {
          other.add(l);
          continue;
        }
        switch (t[0]) {
          case "begin" -> pending = new int[] {i, j};
          case "ok" -> {
            open[i][j] = true;
            error[i][j] = null;
            answered[i][j] = true;
            pending = null;
          }
          default -> {
            if (error[i][j] == null) {
              error[i][j] = "opener GPU " + j + ", owner GPU " + i + ": "
                  + (t.length > 3 ? t[3] : "failed");
            }
            answered[i][j] = true;
            pending = null;
          }
        }
      } else {
        other.add(l);
      }
    }
    String tail = other.isEmpty() ? "" : "; it said: " + String.join(" | ",
        other.subList(Math.max(0, other.size() - 5), other.size()));
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (answered[i][j] || error[i][j] != null) {
          continue;
        }
        if (pending != null && pending[0] == i && pending[1] == j) {
          error[i][j] = "opener GPU " + j + ", owner GPU " + i + ": no answer within "
              + timeout.toSeconds() + " s (the child hung in cuIpcOpenMemHandle or the copy, "
              + "and was killed)" + tail;
        } else if (!finished) {
          error[i][j] = "not probed: the child JVM was killed at the " + timeout.toSeconds()
              + " s deadline before reaching this pair" + (pending == null ? tail : "");
        } else {
          error[i][j] = "not probed: the child JVM exited with status " + exit
              + " before reaching this pair" + tail;
        }
      }
    }
    return new Result(n, open, error, null);
  }

  private static Result fill(boolean[][] open, String[][] error, String why) {
    for (String[] row : error) {
      for (int j = 0; j < row.length; j++) {
        if (row[j] == null) {
          row[j] = why;
        }
      }
    }
    return new Result(open.length, open, error, null);
  }

  /** The 16 bytes owner GPU i writes: different per GPU, so a mapping of the wrong one shows. */
  static byte[] pattern(int owner) {
    byte[] b = new byte[CHECK_BYTES];
    for (int k = 0; k < b.length; k++) {
      b[k] = (byte) (0x5a + 31 * owner + 7 * k);
    }
    return b;
  }

  /** The child: {@code --child DEADLINE_MS}, handles on stdin, one line per pair on stdout. */
  public static void main(String[] args) throws IOException {
    if (args.length != 2 || !args[0].equals("--child")) {
      System.err.println("usage: IpcOpenProbe --child DEADLINE_MS (started by "
          + "IpcOpenProbe.probe, which feeds the handles on stdin)");
      System.exit(2);
    }
    long deadlineMs = Long.parseLong(args[1]);
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    // a hung driver call cannot be interrupted; halting is the only bound, and the owner has
    // its own deadline a little earlier, so this only fires when the owner is gone
    Thread watchdog = new Thread(() -> {
      try {
        Thread.sleep(deadlineMs + 5_000);
      } catch (InterruptedException e) {
        return;
      }
      out.println("child deadline of " + (deadlineMs + 5_000) + " ms passed: halting");
      Runtime.getRuntime().halt(3);
    }, "ipc-probe-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
        StandardCharsets.UTF_8));
    int n = Integer.parseInt(in.readLine().trim());
    String[] handles = new String[n];
    for (int i = 0; i < n; i++) {
      handles[i] = in.readLine();
    }
    String why = GpuDevices.initDriver();
    if (why != null) {
      out.println("unavailable " + why);
      return;
    }
    int[] count = new int[1];
    cuDeviceGetCount(count);
    int openers = Math.min(n, count[0]);
    for (int j = 0; j < openers; j++) {
      CUdevice d = new CUdevice();
      CUcontext ctx = new CUcontext();
      try {
        cuDeviceGet(d, j);
        cuDevicePrimaryCtxRetain(ctx, d);
        cuCtxSetCurrent(ctx);
      } catch (CudaException e) {
        for (int i = 0; i < n; i++) {
          out.println("fail " + i + " " + j + " context: primary context of GPU " + j
              + " in the child: " + e.getMessage());
        }
        continue;
      }
      for (int i = 0; i < n; i++) {
        if (handles[i] == null || handles[i].equals("-")) {
          continue; // the owner recorded why it has no handle
        }
        out.println("begin " + i + " " + j);
        out.println(openOne(i, j, handles[i]));
      }
      try {
        cuDevicePrimaryCtxRelease(d);
      } catch (CudaException e) {
        out.println("releasing GPU " + j + "'s context failed: " + e.getMessage());
      }
    }
    for (int j = openers; j < n; j++) {
      for (int i = 0; i < n; i++) {
        out.println("fail " + i + " " + j + " context: the child sees only " + count[0]
            + " GPUs");
      }
    }
    out.flush();
    Runtime.getRuntime().halt(0); // do not wait for the watchdog or JCuda's shutdown hooks
  }

  private static String openOne(int i, int j, String hex) {
    CUdeviceptr mapped = new CUdeviceptr();
    String phase = "open";
    try {
      byte[] handle = HexFormat.of().parseHex(hex.trim());
      cuIpcOpenMemHandle(mapped, IpcHandles.memHandle(handle),
          CUipcMem_flags.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      phase = "copy";
      byte[] got = new byte[CHECK_BYTES];
      cuMemcpyDtoH(Pointer.to(got), mapped, CHECK_BYTES);
      phase = "close";
      cuIpcCloseMemHandle(mapped);
      if (!Arrays.equals(got, pattern(i))) {
        return "fail " + i + " " + j + " verify: read " + HexFormat.of().formatHex(got)
            + ", expected " + HexFormat.of().formatHex(pattern(i));
      }
      return "ok " + i + " " + j;
    } catch (CudaException | IllegalArgumentException e) {
      if (phase.equals("copy")) {
        try {
          cuIpcCloseMemHandle(mapped);
        } catch (CudaException ignored) {
          // the copy's error is the one to report
        }
      }
      return "fail " + i + " " + j + " " + phase + ": " + e.getMessage();
    }
  }
}
