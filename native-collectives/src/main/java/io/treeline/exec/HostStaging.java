package io.treeline.exec;

import java.nio.ByteBuffer;

/**
 * The STAGE buffer of a staged plan ({@code plan.StagedHierarchical}) and the copies that fill
 * and empty it: on the GPU path, pinned host memory and the copy engine between it and the
 * device OUTPUT. {@link StagedRunner} drives it from the plan's {@code StageOut} and
 * {@code StageIn} steps and runs the message steps between them on {@link #buffer()}.
 *
 * <p>Chunks are numbered in the order of the plan's stage-outs (and stage-ins, which come in the
 * same order). {@link #stageOut} and {@link #stageIn} may be asynchronous (enqueued on a stream);
 * {@link #awaitStaged} returns once chunk {@code chunk}'s bytes are in {@link #buffer()}, and the
 * runner calls it before the first message step or stage-in of that chunk. A stage-in that
 * {@code finish}es also finishes the chunk (an AVG divides once, where the chunk lands).
 */
public interface HostStaging {
  /** The STAGE buffer the message steps read and write (native order, direct). */
  ByteBuffer buffer();

  /**
   * A call is about to stage {@code chunks} chunks spanning {@code bytes} bytes of
   * {@link #buffer()}; throws {@code IllegalArgumentException} (naming the rank) when they do
   * not fit.
   */
  void begin(int chunks, long bytes);

  /** Copy elements {@code [offset, offset + count)} of OUTPUT to STAGE at byte {@code at}. */
  void stageOut(int chunk, long offset, long count, long at);

  /** Wait until chunk {@code chunk}'s stage-out landed; fails at {@code deadline}. */
  void awaitStaged(int chunk, long deadline);

  /** Copy STAGE at byte {@code at} back to elements {@code [offset, offset + count)} of OUTPUT. */
  void stageIn(int chunk, long offset, long count, long at, boolean finish);
}
