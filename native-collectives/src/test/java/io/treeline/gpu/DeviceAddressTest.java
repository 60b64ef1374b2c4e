package io.treeline.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.treeline.comm.PeerInfo;
import java.io.UncheckedIOException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The GPU path's address inside the shared set-up record (no GPU needed). */
class DeviceAddressTest {
  private static byte[] handle(int seed) {
    byte[] h = new byte[64];
    Arrays.fill(h, (byte) seed);
    return h;
  }

  @Test
  void aDeviceAddressCrossesAsPeerInfosMemoryAddress() {
    byte[][] events = {handle(4), handle(5), handle(6)};
    DeviceAddress a = new DeviceAddress("GPU-1234", "0000:1b:00.0", "/dev/shm/x", 0x7f00L,
        0x8f00L, 0x9f00L, handle(1), handle(2), handle(3), events);
    PeerInfo p = PeerInfo.decode(new PeerInfo(1, "n", 77, a.encode(), new byte[0]).encode());
    DeviceAddress b = DeviceAddress.decode(p.memory());
    assertEquals("GPU-1234", b.gpu());
    assertEquals("0000:1b:00.0", b.busId());
    assertEquals("/dev/shm/x", b.segment());
    assertEquals(0x7f00L, b.input());
    assertEquals(0x8f00L, b.output());
    assertEquals(0x9f00L, b.flags());
    assertArrayEquals(handle(1), b.inputHandle());
    assertArrayEquals(handle(2), b.outputHandle());
    assertArrayEquals(handle(3), b.flagsHandle());
    assertEquals(3, b.events().length);
    assertArrayEquals(handle(6), b.events()[2]);
    byte[] cut = Arrays.copyOf(a.encode(), a.encode().length - 1);
    assertThrows(UncheckedIOException.class, () -> DeviceAddress.decode(cut));
  }
}
