package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class GpuDevicesTest {
  @Test
  void aUuidIsPrintedAsNvidiaSmiPrintsIt() {
    byte[] b = new byte[16];
    for (int i = 0; i < 16; i++) {
      b[i] = (byte) (0xd0 + i * 0x13);
    }
    // the H200's nvidia-smi shape: GPU-8-4-4-4-12, lower case
    assertEquals("GPU-d0e3f609-1c2f-4255-687b-8ea1b4c7daed", GpuDevices.formatUuid(b));
  }

  @Test
  void busIdsFromTheDriverAndFromNvidiaSmiBecomeTheSysfsName() {
    assertEquals("0000:3b:00.0", GpuDevices.normalizeBusId("0000:3B:00.0")); // driver
    assertEquals("0000:3b:00.0", GpuDevices.normalizeBusId("00000000:3B:00.0")); // nvidia-smi
    assertEquals("0000:3b:00.0", GpuDevices.normalizeBusId("3B:00.0"));
  }

  @Test
  void theLoadErrorIsReducedToTheMissingLibrary() {
    String jcuda = "Error while loading native library \"JCudaDriver-12.0.0-linux-x86_64\"\n"
        + "java.lang.UnsatisfiedLinkError: /tmp/libJCudaDriver-12.0.0-linux-x86_64.so: "
        + "libcuda.so.1: cannot open shared object file: No such file or directory\n\tat x";
    assertEquals("libcuda.so.1: cannot open shared object file: No such file or directory",
        GpuDevices.loadFailure(jcuda));
  }

  @Test
  void withoutADriverTheListIsEmptyAndSaysWhyInsteadOfThrowing() {
    GpuDevices.Listing l = GpuDevices.list();
    Assumptions.assumeFalse(l.available(), "this machine has a CUDA driver");
    assertTrue(l.gpus().isEmpty());
    assertTrue(l.unavailable().startsWith("no CUDA driver") || l.unavailable().contains("no "
        + "device"), l.unavailable());
    // a second call gives the same reason, not JCuda's bare NoClassDefFoundError
    assertEquals(l.unavailable(), GpuDevices.list().unavailable());
  }

  @Tag("gpu")
  @Test
  void everyDeviceHasAUuidAPciBusIdMemoryAndSms() {
    GpuDevices.Listing l = GpuDevices.list();
    Assumptions.assumeTrue(l.available(), () -> "no GPU here: " + l.unavailable());
    assertFalse(l.gpus().isEmpty());
    for (GpuDevices.Gpu g : l.gpus()) {
      assertTrue(g.uuid().matches("GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"), g.uuid());
      assertTrue(g.pciBusId().matches("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]"),
          g.pciBusId());
      assertTrue(g.totalMemory() > 0 && g.smCount() > 0, g.toString());
    }
    System.out.println("GPUs: " + l);
  }
}
