package io.treeline.plan;

import java.util.ArrayList;
import java.util.List;

/**
 * One rank's step list under construction. Empty regions produce no step, on both sides of a
 * message alike, because sender and receiver compute the same regions.
 */
final class Schedule {
  final int rank;
  final List<Step> steps = new ArrayList<>();

  Schedule(int rank) {
    this.rank = rank;
  }

  static List<Schedule> forRanks(int n) {
    List<Schedule> s = new ArrayList<>(n);
    for (int r = 0; r < n; r++) {
      s.add(new Schedule(r));
    }
    return s;
  }

  static List<List<Step>> steps(List<Schedule> schedules) {
    List<List<Step>> out = new ArrayList<>(schedules.size());
    for (Schedule s : schedules) {
      out.add(List.copyOf(s.steps));
    }
    return out;
  }

  void copy(long offset, long count, boolean finish) {
    if (count > 0) {
      steps.add(new Step.Copy(offset, count, finish));
    }
  }

  void send(int peer, int lane, Buf src, long offset, long count) {
    if (count > 0) {
      steps.add(new Step.Send(peer, lane, src, offset, count));
    }
  }

  void recvReduce(int peer, int lane, Buf acc, long offset, long count, boolean finish) {
    if (count > 0) {
      steps.add(new Step.RecvReduce(peer, lane, acc, offset, count, finish));
    }
  }

  void recvCopy(int peer, int lane, Buf dst, long offset, long count) {
    if (count > 0) {
      steps.add(new Step.RecvCopy(peer, lane, dst, offset, count));
    }
  }

  void stageOut(long offset, long count) {
    if (count > 0) {
      steps.add(new Step.StageOut(offset, count));
    }
  }

  void stageIn(long offset, long count, boolean finish) {
    if (count > 0) {
      steps.add(new Step.StageIn(offset, count, finish));
    }
  }

  void reduceFrom(int[] peers, Buf buf, long offset, long count, boolean finish) {
    if (count > 0) {
      steps.add(new Step.ReduceFrom(peers.clone(), buf, offset, count, finish));
    }
  }

  void copyFrom(int peer, Buf buf, long offset, long count) {
    if (count > 0) {
      steps.add(new Step.CopyFrom(peer, buf, offset, count));
    }
  }

  void signal(int phase) {
    steps.add(new Step.Signal(phase));
  }

  void await(int peer, int phase) {
    steps.add(new Step.Wait(peer, phase));
  }

  /** Signal {@code phase}, then wait until every other rank of {@code group} has signalled it. */
  void barrier(int[] group, int phase) {
    steps.add(new Step.Signal(phase));
    for (int p : group) {
      if (p != rank) {
        steps.add(new Step.Wait(p, phase));
      }
    }
  }
}
