package io.treeline.barrier;

import io.treeline.kernels.GpuDevices;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.TaskContext;
import org.apache.spark.resource.ResourceInformation;

/**
 * Which GPU a Spark "gpu" address names in this process. Spark hands each executor (and each
 * task, {@code spark.task.resource.gpu.amount=1}) addresses printed by the discovery script:
 * nvidia-smi indices ("0", as Spark's getGpusResources.sh and Treeline's bin/ script print
 * them) or UUIDs ("GPU-..."). An index is nvidia-smi's (PCI bus order, blind to
 * CUDA_VISIBLE_DEVICES), not a CUDA ordinal (CUDA orders devices fastest-first and renumbers
 * what CUDA_VISIBLE_DEVICES leaves): the address is taken to nvidia-smi's UUID, and the UUID
 * to the CUDA ordinal that has it. An address that names no GPU nvidia-smi lists, or a GPU
 * CUDA cannot see in this process, is refused with what each of them sees.
 *
 * <p>Where nvidia-smi is missing, an index is taken as the CUDA ordinal; where the CUDA driver
 * is missing, the binding stops at nvidia-smi's UUID (ordinal -1: only the host path runs).
 */
public final class GpuBinding {
  private static volatile List<SmiGpu> smiCache;
  private static volatile boolean smiRead;

  private GpuBinding() {
  }

  /** One row of {@code nvidia-smi --query-gpu=index,uuid}. */
  public record SmiGpu(int index, String uuid) {
  }

  /**
   * A Spark address bound to a GPU: nvidia-smi's index and UUID (-1 and null where nvidia-smi
   * is missing) and the CUDA ordinal in this process (-1 without a CUDA driver).
   */
  public record Bound(String address, int smiIndex, String uuid, int cudaOrdinal, String how) {
    @Override
    public String toString() {
      return "GPU address " + address + " = nvidia-smi index " + (smiIndex < 0 ? "?" : smiIndex)
          + ", " + (uuid == null ? "UUID unknown" : uuid) + ", CUDA ordinal "
          + (cudaOrdinal < 0 ? "none" : cudaOrdinal) + " (" + how + ")";
    }
  }

  /**
   * Binds {@code address}; {@code smi} is nvidia-smi's listing or null where it is missing,
   * {@code cuda} the CUDA driver's.
   *
   * @param address Spark's address of the GPU: an nvidia-smi index or a UUID
   * @param smi nvidia-smi's GPUs, or null where nvidia-smi is missing
   * @param cuda the CUDA driver's GPUs
   * @return the binding
   * @throws IllegalStateException when the address names no GPU this process can see
   */
  public static Bound resolve(String address, List<SmiGpu> smi, GpuDevices.Listing cuda) {
    String a = address.trim();
    boolean isIndex = a.matches("\\d+");
    boolean isUuid = a.startsWith("GPU-") || a.startsWith("MIG-");
    if (!isIndex && !isUuid) {
      throw new IllegalStateException("Spark assigned GPU address '" + a + "', which is neither "
          + "an nvidia-smi index nor a GPU UUID (GPU-...): the discovery script "
          + "(spark.executor.resource.gpu.discoveryScript) must print one of them, as "
          + "Treeline's getGpusResources.sh does");
    }
    int index = -1;
    String uuid = isUuid ? a : null;
    String how;
    if (smi != null) {
      SmiGpu hit = smi.stream().filter(g -> isIndex ? g.index() == Integer.parseInt(a)
          : g.uuid().equalsIgnoreCase(a)).findFirst().orElse(null);
      if (hit == null) {
        throw new IllegalStateException("Spark assigned GPU address " + a + ", but nvidia-smi "
            + "on this executor lists " + describe(smi) + ": the discovery script and this "
            + "executor see different GPUs (is the script run on another node, or does it "
            + "print addresses of GPUs outside this container?)");
      }
      index = hit.index();
      uuid = hit.uuid();
      how = "by " + (isIndex ? "nvidia-smi index" : "UUID") + " through nvidia-smi";
    } else {
      index = isIndex ? Integer.parseInt(a) : -1;
      how = "no nvidia-smi on this executor";
    }
    if (cuda == null || !cuda.available()) {
      return new Bound(a, index, uuid, -1, how + "; no CUDA driver: "
          + (cuda == null ? "not asked" : cuda.unavailable()));
    }
    List<GpuDevices.Gpu> seen = cuda.gpus();
    if (uuid != null) {
      final String u = uuid;
      GpuDevices.Gpu g = seen.stream().filter(d -> d.uuid().equalsIgnoreCase(u)).findFirst()
          .orElse(null);
      if (g == null) {
        throw new IllegalStateException("Spark assigned GPU address " + a + " (" + uuid + "), "
            + "but CUDA in this executor sees only " + seen.stream().map(d -> d.ordinal() + " ("
            + d.uuid() + ")").toList() + " (CUDA_VISIBLE_DEVICES="
            + System.getenv("CUDA_VISIBLE_DEVICES") + "): the GPU Spark gave this task is "
            + "hidden from it; let the discovery script print only the GPUs this container "
            + "may use");
      }
      return new Bound(a, index, uuid, g.ordinal(), how + ", CUDA ordinal by UUID");
    }
    int ordinal = Integer.parseInt(a);
    if (ordinal >= seen.size()) {
      throw new IllegalStateException("Spark assigned GPU address " + a + ", taken as a CUDA "
          + "ordinal (no nvidia-smi here to map it), but CUDA sees " + seen.size()
          + " device(s); install nvidia-smi on the node or let the discovery script print "
          + "UUIDs (TREELINE_GPU_ADDRESSES=uuid)");
    }
    return new Bound(a, index, seen.get(ordinal).uuid(), ordinal, how
        + ", index taken as the CUDA ordinal");
  }

  /**
   * Binds every address of an executor's or task's "gpu" resource.
   *
   * @param gpu the resource
   * @return one binding per address
   */
  public static List<Bound> resolveAll(ResourceInformation gpu) {
    List<Bound> out = new ArrayList<>();
    GpuDevices.Listing cuda = GpuDevices.list();
    for (String a : gpu.addresses()) {
      out.add(resolve(a, nvidiaSmi(), cuda));
    }
    return out;
  }

  /**
   * The GPU Spark assigned to the calling task, bound; null when the task was assigned none.
   * Refuses a task given more than one (Treeline runs one GPU per task).
   *
   * @return the task's GPU, or null
   */
  public static Bound forTask() {
    TaskContext tc = TaskContext.get();
    if (tc == null) {
      throw new IllegalStateException("GpuBinding.forTask() must be called inside a Spark task");
    }
    scala.Option<ResourceInformation> gpu = tc.resources().get("gpu");
    if (gpu.isEmpty() || gpu.get().addresses().length == 0) {
      return null;
    }
    if (gpu.get().addresses().length > 1) {
      throw new IllegalStateException("task " + tc.taskAttemptId() + " was given GPUs "
          + String.join(",", gpu.get().addresses()) + "; Treeline runs one GPU per task: set "
          + "spark.task.resource.gpu.amount=1");
    }
    return resolve(gpu.get().addresses()[0], nvidiaSmi(), GpuDevices.list());
  }

  /**
   * nvidia-smi's GPUs, read once per JVM.
   *
   * @return the GPUs, or null when nvidia-smi is missing or fails
   */
  public static List<SmiGpu> nvidiaSmi() {
    if (!smiRead) {
      synchronized (GpuBinding.class) {
        if (!smiRead) {
          smiCache = readNvidiaSmi();
          smiRead = true;
        }
      }
    }
    return smiCache;
  }

  /**
   * Parses {@code nvidia-smi --query-gpu=index,uuid --format=csv,noheader}.
   *
   * @param csv nvidia-smi's output
   * @return its rows
   */
  public static List<SmiGpu> parse(String csv) {
    List<SmiGpu> out = new ArrayList<>();
    for (String line : csv.split("\n")) {
      String[] c = line.trim().split("\\s*,\\s*");
      if (c.length >= 2 && c[0].matches("\\d+")) {
        out.add(new SmiGpu(Integer.parseInt(c[0]), c[1].trim()));
      }
    }
    return List.copyOf(out);
  }

  private static List<SmiGpu> readNvidiaSmi() {
    try {
      Process p = new ProcessBuilder("nvidia-smi", "--query-gpu=index,uuid",
          "--format=csv,noheader").redirectErrorStream(true).start();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        return null;
      }
      return parse(new String(out, StandardCharsets.UTF_8));
    } catch (IOException e) {
      return null; // not installed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  private static String describe(List<SmiGpu> smi) {
    if (smi.isEmpty()) {
      return "no GPU";
    }
    return String.join(", ", smi.stream().map(g -> g.index() + " (" + g.uuid() + ")").toList());
  }
}
