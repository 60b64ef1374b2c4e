package io.treeline.topology;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Seed 004's lesson as a check: a PCIe link that trained down (8 GT/s where 16 is possible, x8
 * where x16 is) halves bandwidth without any error, and rising AER corrected-error counts
 * announce a link going bad. Every GPU and NIC link is compared with its maximum and, when a
 * baseline is given, its AER counters with the baseline's.
 */
public final class LinkHealth {
  private LinkHealth() {
  }

  /** One warning, with the device and what to do. */
  public record Warning(String bdf, String role, String message) {
    @Override
    public String toString() {
      return "WARNING " + role + " " + bdf + ": " + message;
    }
  }

  public static List<Warning> check(List<PciDevice> devices, Map<String, PciDevice> baseline) {
    List<Warning> w = new ArrayList<>();
    for (PciDevice d : devices) {
      if (!(d.isGpu() || d.isNic()) || !d.hasLink()) {
        continue;
      }
      if (d.speed() < d.maxSpeed() || d.width() < d.maxWidth()) {
        double share = (d.speed() * d.width()) / (d.maxSpeed() * d.maxWidth());
        w.add(new Warning(d.bdf(), d.role(), String.format("link at %s GT/s x%d, below its "
            + "maximum %s GT/s x%d: about %.0f%% of its bandwidth, with no error reported. "
            + "Reseat the card, check the slot, pin the PCIe generation in the BIOS and turn "
            + "ASPM off (seed 004, 5.2)", num(d.speed()), d.width(), num(d.maxSpeed()),
            d.maxWidth(), 100 * share)));
      }
      PciDevice b = baseline == null ? null : baseline.get(d.bdf());
      if (b != null && d.aerCorrectable() > b.aerCorrectable() && b.aerCorrectable() >= 0) {
        w.add(new Warning(d.bdf(), d.role(), "AER corrected errors rose from "
            + b.aerCorrectable() + " to " + d.aerCorrectable() + ": the link's signal "
            + "integrity is degrading (seed 004, 5.1); watch dmesg and plan to reseat"));
      }
      long bad = Math.max(0, d.aerNonFatal()) + Math.max(0, d.aerFatal());
      long badBefore = b == null ? 0 : Math.max(0, b.aerNonFatal()) + Math.max(0, b.aerFatal());
      if (bad > badBefore) {
        w.add(new Warning(d.bdf(), d.role(), "uncorrectable AER errors: " + bad
            + (b != null ? " (was " + badBefore + ")" : "")));
      }
    }
    return w;
  }

  private static String num(double gts) {
    return gts == Math.rint(gts) ? String.format("%.0f", gts) : String.valueOf(gts);
  }
}
