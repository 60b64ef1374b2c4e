package io.treeline.plan;

/**
 * The buffers of a rank in a plan, each {@code count} elements long. INPUT and OUTPUT are the
 * two every rank brings to a collective: a rank only ever writes its own OUTPUT; INPUT is
 * read-only for the whole collective, so peers may read it in place. STAGE is a rank's private
 * host copy of its OUTPUT, used only by plans whose buffers live on a GPU and whose messages
 * cross nodes through host memory ({@link StagedHierarchical}): {@link Step.StageOut} fills it
 * from OUTPUT, message steps read and write it, {@link Step.StageIn} copies it back. No peer
 * reads another rank's STAGE.
 */
public enum Buf {
  INPUT, OUTPUT, STAGE
}
