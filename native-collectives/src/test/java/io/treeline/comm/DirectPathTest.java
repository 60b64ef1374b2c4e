package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.Tuning;
import org.junit.jupiter.api.Test;

/** When the caller's buffers stand in for the registered ones (treeline.directInput/Output). */
class DirectPathTest {
  @Test
  void autoWhereTheRanksFitTheCoresAndTrueOrFalseForce() {
    for (Tuning knob : new Tuning[] {Tuning.DIRECT_INPUT, Tuning.DIRECT_OUTPUT}) {
      String key = knob.key();
      String before = System.getProperty(key);
      try {
        System.clearProperty(key);
        assertTrue(HostCommunicator.directPath(knob, 2, 2), "2 ranks fit 2 cores");
        assertTrue(HostCommunicator.directPath(knob, 8, 16));
        assertFalse(HostCommunicator.directPath(knob, 4, 2), "4 ranks outnumber 2 cores");
        System.setProperty(key, "true");
        assertTrue(HostCommunicator.directPath(knob, 4, 2));
        System.setProperty(key, "false");
        assertFalse(HostCommunicator.directPath(knob, 2, 16));
        System.setProperty(key, "sometimes");
        assertThrows(IllegalArgumentException.class,
            () -> HostCommunicator.directPath(knob, 2, 16));
      } finally {
        if (before == null) {
          System.clearProperty(key);
        } else {
          System.setProperty(key, before);
        }
      }
    }
  }
}
