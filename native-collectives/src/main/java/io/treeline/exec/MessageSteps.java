package io.treeline.exec;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Buf;
import io.treeline.plan.Step;
import io.treeline.reduce.Reducer;
import java.nio.ByteBuffer;

/**
 * The one interpretation of a plan's message steps ({@code Send}, {@code RecvReduce},
 * {@code RecvCopy}) over a {@link NetworkLink}: {@link PlanRunner} runs host plans' with it,
 * {@link StagedRunner} the staged plans' on their STAGE buffer. Allocates nothing.
 */
final class MessageSteps {
  private final NetworkLink network;
  private final Reducer reducer;
  private final int rank;

  MessageSteps(NetworkLink network, Reducer reducer, int rank) {
    this.network = network;
    this.reducer = reducer;
    this.rank = rank;
  }

  static boolean isMessage(Step s) {
    return s instanceof Step.Send || s instanceof Step.RecvReduce || s instanceof Step.RecvCopy;
  }

  static int peer(Step s) {
    if (s instanceof Step.Send x) {
      return x.peer();
    }
    if (s instanceof Step.RecvReduce x) {
      return x.peer();
    }
    return ((Step.RecvCopy) s).peer();
  }

  /**
   * Run message step {@code s} with {@code peer} (the link's number for the step's peer), the
   * region at byte {@code off} of each buffer; a buffer the plan does not use may be null.
   * A {@code RecvReduce} writes OUTPUT, or STAGE when its {@code acc} is STAGE.
   */
  void run(Step s, int peer, ByteBuffer input, ByteBuffer output, ByteBuffer stage, long off,
      DataType type, ReduceOp op, int divisor, long deadline, String phase) {
    long bytes = s.count() * type.size();
    if (s instanceof Step.Send x) {
      network.send(peer, x.lane(), buffer(x.src(), input, output, stage, s), off, bytes,
          deadline, phase);
    } else if (s instanceof Step.RecvReduce x) {
      ByteBuffer acc = buffer(x.acc(), input, output, stage, s);
      ByteBuffer dst = x.acc() == Buf.STAGE ? acc : buffer(Buf.OUTPUT, input, output, stage, s);
      ByteBuffer msg = network.receive(peer, x.lane(), bytes, deadline, phase);
      reducer.reduce2(type, op, acc, off, msg, 0, dst, off, s.count(), x.finish(), divisor);
      network.release(peer, x.lane(), deadline, phase);
    } else if (s instanceof Step.RecvCopy x) {
      ByteBuffer dst = buffer(x.dst(), input, output, stage, s);
      ByteBuffer msg = network.receive(peer, x.lane(), bytes, deadline, phase);
      reducer.copy(type, op, msg, 0, dst, off, s.count(), false, divisor);
      network.release(peer, x.lane(), deadline, phase);
    } else {
      throw new IllegalArgumentException("rank " + rank + ": " + s + " is not a message step");
    }
  }

  private ByteBuffer buffer(Buf b, ByteBuffer input, ByteBuffer output, ByteBuffer stage,
      Step s) {
    ByteBuffer buf = switch (b) {
      case INPUT -> input;
      case OUTPUT -> output;
      case STAGE -> stage;
    };
    if (buf == null) {
      throw new IllegalArgumentException("rank " + rank + ": " + s + " names " + b + ", which "
          + "this run has not got (STAGE only in the staged part of a GPU plan, INPUT and "
          + "OUTPUT only outside it)");
    }
    return buf;
  }
}
