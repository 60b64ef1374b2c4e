package io.treeline.barrier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.kernels.GpuDevices;
import java.util.List;
import org.junit.jupiter.api.Test;

class GpuBindingTest {
  static final String U0 = "GPU-11111111-2222-3333-4444-555555555555";
  static final String U1 = "GPU-66666666-7777-8888-9999-000000000000";
  static final List<GpuBinding.SmiGpu> SMI = GpuBinding.parse("0, " + U0 + "\n1, " + U1 + "\n");

  static GpuDevices.Listing cuda(String... uuids) {
    List<GpuDevices.Gpu> g = new java.util.ArrayList<>();
    for (int i = 0; i < uuids.length; i++) {
      g.add(new GpuDevices.Gpu(i, "H200", uuids[i], "0000:0" + i + ":00.0", 1L << 37, 132));
    }
    return new GpuDevices.Listing(g, "13.0", null);
  }

  static final GpuDevices.Listing NO_DRIVER = new GpuDevices.Listing(List.of(), null,
      "no CUDA driver: libcuda.so.1: cannot open shared object file");

  @Test
  void anIndexIsNvidiaSmisAndReachesTheCudaOrdinalThroughTheUuid() {
    // CUDA_VISIBLE_DEVICES=1 (or isolation): the GPU of nvidia-smi index 1 is CUDA ordinal 0
    GpuBinding.Bound b = GpuBinding.resolve("1", SMI, cuda(U1));
    assertEquals(1, b.smiIndex());
    assertEquals(U1, b.uuid());
    assertEquals(0, b.cudaOrdinal());
    // CUDA ordering the two the other way round (fastest first) does not matter
    assertEquals(0, GpuBinding.resolve("1", SMI, cuda(U1, U0)).cudaOrdinal());
    assertEquals(1, GpuBinding.resolve("0", SMI, cuda(U1, U0)).cudaOrdinal());
  }

  @Test
  void aUuidBindsDirectly() {
    GpuBinding.Bound b = GpuBinding.resolve(U0, SMI, cuda(U1, U0));
    assertEquals(0, b.smiIndex());
    assertEquals(1, b.cudaOrdinal());
    assertEquals(1, GpuBinding.resolve(U0, null, cuda(U1, U0)).cudaOrdinal());
  }

  @Test
  void withoutADriverTheBindingStopsAtNvidiaSmi() {
    GpuBinding.Bound b = GpuBinding.resolve("1", SMI, NO_DRIVER);
    assertEquals(U1, b.uuid());
    assertEquals(-1, b.cudaOrdinal());
    assertTrue(b.how().contains("libcuda"), b.how());
  }

  @Test
  void withoutNvidiaSmiAnIndexIsTheCudaOrdinal() {
    GpuBinding.Bound b = GpuBinding.resolve("1", null, cuda(U0, U1));
    assertEquals(1, b.cudaOrdinal());
    assertEquals(U1, b.uuid());
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> GpuBinding.resolve("3", null, cuda(U0)));
    assertTrue(e.getMessage().contains("CUDA sees 1 device"), e.getMessage());
  }

  @Test
  void mismatchesAreRefusedSayingWhatEachSideSees() {
    String m = assertThrows(IllegalStateException.class,
        () -> GpuBinding.resolve("5", SMI, NO_DRIVER)).getMessage();
    assertTrue(m.contains("address 5") && m.contains("0 (" + U0 + "), 1 (" + U1 + ")"), m);
    m = assertThrows(IllegalStateException.class,
        () -> GpuBinding.resolve("GPU-deadbeef", SMI, NO_DRIVER)).getMessage();
    assertTrue(m.contains("nvidia-smi on this executor lists"), m);
    // nvidia-smi sees both GPUs, CUDA in this process only the other one
    m = assertThrows(IllegalStateException.class,
        () -> GpuBinding.resolve("0", SMI, cuda(U1))).getMessage();
    assertTrue(m.contains("CUDA in this executor sees only [0 (" + U1 + ")]"), m);
    m = assertThrows(IllegalStateException.class,
        () -> GpuBinding.resolve("gpu0", SMI, NO_DRIVER)).getMessage();
    assertTrue(m.contains("neither an nvidia-smi index nor a GPU UUID"), m);
  }

  @Test
  void outsideATaskThereIsNoBinding() {
    assertThrows(IllegalStateException.class, GpuBinding::forTask);
    assertNull(org.apache.spark.TaskContext.get());
  }
}
