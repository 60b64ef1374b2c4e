package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetCount;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceGetPCIBusId;
import static jcuda.driver.JCudaDriver.cuDeviceGetUuid;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;
import static jcuda.driver.JCudaDriver.cuDriverGetVersion;
import static jcuda.driver.JCudaDriver.cuInit;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import jcuda.CudaException;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUuuid;
import jcuda.driver.JCudaDriver;

/**
 * Every CUDA device this process sees, named the way that survives isolation: by UUID
 * ({@code cuDeviceGetUuid}, printed as nvidia-smi prints it) and PCI bus id
 * ({@code cuDeviceGetPCIBusId}, in sysfs's form). The CUDA ordinal is listed too, but only to
 * address the device inside this process: CUDA_VISIBLE_DEVICES and YARN's isolation renumber it.
 *
 * <p>Without a usable driver (no libcuda.so.1, a driver too old for JCuda, no device) the
 * listing is empty and says why; it never throws, because a machine without a GPU runs
 * Treeline's host path and the topology report must still be printed there.
 */
public final class GpuDevices {
  /** Why the driver did not load, once known: a failed native load is final for the JVM. */
  private static String driverMissing;

  private GpuDevices() {
  }

  /** One device: its ordinal in this process, name, UUID, PCI bus id, memory and SMs. */
  public record Gpu(int ordinal, String name, String uuid, String pciBusId, long totalMemory,
      int smCount) {
  }

  /**
   * The devices, the driver's CUDA version ("13.0"), and, when the list is empty, the reason
   * (null when the driver answered).
   */
  public record Listing(List<Gpu> gpus, String driverVersion, String unavailable) {
    public boolean available() {
      return unavailable == null;
    }
  }

  /** Lists the devices through the driver API; empty with a reason when there is no driver. */
  public static Listing list() {
    String why = initDriver();
    if (why != null) {
      return new Listing(List.of(), null, why);
    }
    try {
      int[] version = new int[1];
      cuDriverGetVersion(version);
      String driver = version[0] / 1000 + "." + (version[0] % 1000) / 10;
      int[] count = new int[1];
      cuDeviceGetCount(count);
      if (count[0] == 0) {
        return new Listing(List.of(), driver, "the CUDA driver (" + driver + ") sees no device"
            + " (CUDA_VISIBLE_DEVICES=" + System.getenv("CUDA_VISIBLE_DEVICES") + ")");
      }
      List<Gpu> gpus = new ArrayList<>();
      for (int i = 0; i < count[0]; i++) {
        gpus.add(describe(i));
      }
      return new Listing(List.copyOf(gpus), driver, null);
    } catch (CudaException e) {
      return new Listing(List.of(), null, "the CUDA driver failed while listing devices: "
          + e.getMessage());
    }
  }

  /**
   * Loads JCuda's driver binding and calls {@code cuInit}; returns null when that worked, else
   * why not. Shared by every GPU-side tool of this package so that each says the same thing on a
   * machine without a driver.
   */
  public static synchronized String initDriver() {
    if (driverMissing != null) {
      return driverMissing;
    }
    try {
      JCudaDriver.setExceptionsEnabled(true);
      cuInit(0);
      return null;
    } catch (UnsatisfiedLinkError e) {
      driverMissing = "no CUDA driver: " + loadFailure(e.getMessage())
          + " (Treeline runs its host path)";
    } catch (LinkageError e) {
      // the first failed load was not ours (JCudaDriver's class initialisation then fails with
      // NoClassDefFoundError on every call, without the reason)
      driverMissing = "no CUDA driver: JCuda's driver binding did not load earlier in this "
          + "process (" + firstLine(e.toString()) + ")";
    } catch (CudaException e) {
      return "cuInit failed: " + e.getMessage();
    }
    return driverMissing;
  }

  /**
   * The line of JCuda's long load error that names the cause (typically
   * "libcuda.so.1: cannot open shared object file: No such file or directory").
   */
  static String loadFailure(String message) {
    if (message == null) {
      return "JCuda's driver binding did not load";
    }
    java.util.regex.Matcher m = java.util.regex.Pattern
        .compile("(lib[\\w.+-]+\\.so[\\w.]*: cannot open shared object file[^\\n]*)")
        .matcher(message);
    return m.find() ? m.group(1) : firstLine(message);
  }

  private static Gpu describe(int ordinal) {
    CUdevice d = new CUdevice();
    cuDeviceGet(d, ordinal);
    byte[] name = new byte[256];
    cuDeviceGetName(name, name.length, d);
    CUuuid uuid = new CUuuid();
    cuDeviceGetUuid(uuid, d);
    String[] bus = new String[1];
    cuDeviceGetPCIBusId(bus, 64, d);
    long[] mem = new long[1];
    cuDeviceTotalMem(mem, d);
    int[] sms = new int[1];
    cuDeviceGetAttribute(sms, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    return new Gpu(ordinal, cString(name), formatUuid(uuid.bytes), normalizeBusId(bus[0]),
        mem[0], sms[0]);
  }

  /** 16 bytes as nvidia-smi prints a GPU's UUID: "GPU-" + 8-4-4-4-12 lower-case hex digits. */
  public static String formatUuid(byte[] b) {
    if (b == null || b.length != 16) {
      throw new IllegalArgumentException("a CUDA UUID has 16 bytes, got "
          + (b == null ? "none" : b.length));
    }
    StringBuilder s = new StringBuilder("GPU-");
    for (int i = 0; i < 16; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) {
        s.append('-');
      }
      s.append(String.format("%02x", b[i] & 0xff));
    }
    return s.toString();
  }

  /**
   * A PCI bus id in the form sysfs names the device: "0000:3b:00.0". The driver gives
   * "0000:3B:00.0", nvidia-smi "00000000:3B:00.0"; both become the same key.
   */
  public static String normalizeBusId(String id) {
    String s = id.trim().toLowerCase(Locale.ROOT);
    String[] parts = s.split(":");
    if (parts.length == 2) {
      return "0000:" + s; // bus:device.function without a domain
    }
    if (parts.length == 3 && parts[0].length() > 4) {
      return parts[0].substring(parts[0].length() - 4) + ":" + parts[1] + ":" + parts[2];
    }
    return s;
  }

  private static String cString(byte[] b) {
    int n = 0;
    while (n < b.length && b[n] != 0) {
      n++;
    }
    return new String(b, 0, n, StandardCharsets.UTF_8);
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }
}
