package io.treeline.exec;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Collective;
import io.treeline.plan.Plan;

/**
 * What a collective call is, in two longs that fit a shared-memory header or a frame: the
 * element count, and the collective, data type, op, root and algorithm packed into the second.
 * Every rank of a collective must make the same call; transports compare descriptors.
 */
public record CallDescriptor(long count, long meta) {
  public static CallDescriptor of(Plan plan, ReduceOp op) {
    long m = ((long) plan.collective().ordinal() << 56) | ((long) plan.type().ordinal() << 48)
        | ((long) op.ordinal() << 40) | ((long) (plan.root() + 1) & 0xFF_FFFFL) << 16
        | (plan.algorithm().hashCode() & 0xFFFFL);
    return new CallDescriptor(plan.count(), m);
  }

  /** 32 bits for a frame header: equal descriptors hash equal. */
  public int hash32() {
    long h = count * 0x9E3779B97F4A7C15L ^ meta * 0xC2B2AE3D27D4EB4FL;
    return (int) (h ^ (h >>> 32));
  }

  /** "allreduce of 1000 x f32, sum" */
  public String describe() {
    Collective c = Collective.values()[(int) (meta >>> 56) & 0xFF];
    DataType t = DataType.values()[(int) (meta >>> 48) & 0xFF];
    ReduceOp op = ReduceOp.values()[(int) (meta >>> 40) & 0xFF];
    long root = ((meta >>> 16) & 0xFF_FFFFL) - 1;
    String name = c.name().toLowerCase().replace("_", "");
    String what = name + " of " + count + " x " + t.name().toLowerCase();
    if (c == Collective.ALL_REDUCE || c == Collective.REDUCE_SCATTER) {
      what += ", " + op.shortName();
    }
    if (c == Collective.BROADCAST) {
      what += " from rank " + root;
    }
    return what;
  }
}
