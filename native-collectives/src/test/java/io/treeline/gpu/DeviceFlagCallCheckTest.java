package io.treeline.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.CallMismatchException;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.CallDescriptor;
import io.treeline.exec.PlanRunner;
import io.treeline.kernels.FlagKernels;
import io.treeline.plan.OneShot;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Topology;
import io.treeline.transport.shm.SharedSegment;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The host side of the flag barrier's call check, without a GPU: the call word the kernel
 * publishes and compares (sequence and descriptor hash), and the exception the communicator
 * makes of a recorded mismatch (both calls named, the peer by its bootstrap rank, the barrier).
 * The kernel's side runs on the GPU ({@code DeviceCollectivesTest}, mode flags-mismatch).
 */
class DeviceFlagCallCheckTest {
  private static CallDescriptor call(long count) {
    return CallDescriptor.of(OneShot.allReduce(Topology.of(2), DataType.F32, count,
        PlanConfig.DEFAULT), ReduceOp.SUM);
  }

  @Test
  void theCallWordCarriesTheSequenceAndTheWholeHash() {
    for (int hash : new int[] {0, 1, -1, 0x8000_0000, call(1000).hash32()}) {
      long w = FlagKernels.callWord(12345, hash);
      assertEquals(12345, w >>> 32);
      assertEquals(hash, (int) w);
    }
    // the kernel compares (word >> 32) for the sequence and the parity is its lowest bit
    assertEquals(1, (FlagKernels.callWord(3, -1) >>> 32) & 1);
    assertTrue(call(1000).hash32() != call(1001).hash32());
  }

  @Test
  void aRecordedMismatchNamesBothCallsThePeerAndTheBarrier(@TempDir Path dir) throws Exception {
    try (SharedSegment own = SharedSegment.create(dir.resolve("treeline-t-r0-p1"), 4, 64);
        SharedSegment peer = SharedSegment.create(dir.resolve("treeline-t-r1-p2"), 7, 64)) {
      CudaPeerMemory memory = new CudaPeerMemory(true, 0, 2, new SharedSegment[] {own, peer},
          new long[] {1, 2}, null, null, new long[2], new int[] {4, 7}, null, null,
          Duration.ofSeconds(1), () -> false, () -> { });
      CallDescriptor mine = call(1000);
      CallDescriptor theirs = call(1001);
      memory.beginCall(3, mine);
      peer.beginCall(3, theirs.count(), theirs.meta());
      long value = 3L * PlanRunner.PHASES + 1;
      CallMismatchException e = memory.mismatch(4, 1, value,
          FlagKernels.callWord(3, theirs.hash32()));
      String m = e.getMessage();
      assertTrue(m.contains("rank 4 is in call #3 (allreduce of 1000 x f32, sum)"), m);
      assertTrue(m.contains("rank 7 is in call #3 (allreduce of 1001 x f32, sum)"), m);
      assertTrue(m.contains("GPU flag barrier of collective #3 phase 1 (local rank 1)"), m);
      // the peer moved on to a later call: its call of #3 is named by its hash
      peer.beginCall(4, 5, 6);
      m = memory.mismatch(4, 1, value, FlagKernels.callWord(3, theirs.hash32())).getMessage();
      assertTrue(m.contains(String.format("descriptor hash %08x", theirs.hash32())), m);
      assertTrue(m.contains("allreduce of 1000 x f32"), m);
    }
  }
}
