package io.treeline.comm;

import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.Handle;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Algorithm;
import java.nio.Buffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * The array ({@code float[]}, {@code double[]}, {@code int[]}, {@code long[]}) and typed-buffer
 * ({@code Float/Double/Int/LongBuffer}) forms of {@link Communicator}'s collectives, as an
 * adapter over the five checked collectives of {@link HostCommunicator}: each form checks its
 * arguments on the caller's thread (range, null, read-only, limit), views an array range as a
 * heap buffer indexed from 0 (the one wrap the forms always made, nothing more per call), and
 * hands it on with its {@link DataType}. The communicator core copies views through
 * {@link TypedViews}.
 */
abstract sealed class TypedForms implements Communicator permits HostCommunicator {
  /** Allreduce on the caller's thread unless asynchronous calls are queued; arguments checked. */
  abstract void allReduceNow(Buffer in, Buffer out, long count, DataType type, ReduceOp op,
      Algorithm algorithm);

  /** Allreduce on the communicator's thread; {@code in}, {@code out} checked. */
  abstract Handle allReduceChecked(Buffer in, Buffer out, long count, DataType type, ReduceOp op,
      Algorithm algorithm);

  abstract void broadcastChecked(Buffer in, Buffer out, long count, DataType type, int root);

  abstract void reduceScatterChecked(Buffer in, Buffer out, long count, DataType type,
      ReduceOp op);

  abstract void allGatherChecked(Buffer in, Buffer out, long count, DataType type);


  @Override
  public void allReduce(float[] in, int inOffset, float[] out, int outOffset, int count, ReduceOp op) {
    allReduceNow(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.F32, op, null);
  }

  @Override
  public Handle allReduceAsync(float[] in, int inOffset, float[] out, int outOffset, int count,
      ReduceOp op) {
    return allReduceChecked(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.F32, op, null);
  }

  @Override
  public void broadcast(float[] in, int inOffset, float[] out, int outOffset, int count, int root) {
    broadcastChecked(array("broadcast", "input", in, inOffset, count),
        array("broadcast", "output", out, outOffset, count), count, DataType.F32, root);
  }

  @Override
  public void reduceScatter(float[] in, int inOffset, float[] out, int outOffset, int count,
      ReduceOp op) {
    reduceScatterChecked(array("reduceScatter", "input", in, inOffset, count),
        array("reduceScatter", "output", out, outOffset, count), count, DataType.F32, op);
  }

  @Override
  public void allGather(float[] in, int inOffset, float[] out, int outOffset, int count) {
    allGatherChecked(array("allGather", "input", in, inOffset, count),
        array("allGather", "output", out, outOffset, count), count, DataType.F32);
  }

  @Override
  public void allReduce(FloatBuffer in, FloatBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    allReduceNow(in, out, count, DataType.F32, op, null);
  }

  @Override
  public Handle allReduceAsync(FloatBuffer in, FloatBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    return allReduceChecked(in, out, count, DataType.F32, op, null);
  }

  @Override
  public void broadcast(FloatBuffer in, FloatBuffer out, int count, int root) {
    requireTyped("broadcast", in, out, count);
    broadcastChecked(in, out, count, DataType.F32, root);
  }

  @Override
  public void reduceScatter(FloatBuffer in, FloatBuffer out, int count, ReduceOp op) {
    requireTyped("reduceScatter", in, out, count);
    reduceScatterChecked(in, out, count, DataType.F32, op);
  }

  @Override
  public void allGather(FloatBuffer in, FloatBuffer out, int count) {
    requireTyped("allGather", in, out, count);
    allGatherChecked(in, out, count, DataType.F32);
  }

  @Override
  public void allReduce(double[] in, int inOffset, double[] out, int outOffset, int count, ReduceOp op) {
    allReduceNow(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.F64, op, null);
  }

  @Override
  public Handle allReduceAsync(double[] in, int inOffset, double[] out, int outOffset, int count,
      ReduceOp op) {
    return allReduceChecked(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.F64, op, null);
  }

  @Override
  public void broadcast(double[] in, int inOffset, double[] out, int outOffset, int count, int root) {
    broadcastChecked(array("broadcast", "input", in, inOffset, count),
        array("broadcast", "output", out, outOffset, count), count, DataType.F64, root);
  }

  @Override
  public void reduceScatter(double[] in, int inOffset, double[] out, int outOffset, int count,
      ReduceOp op) {
    reduceScatterChecked(array("reduceScatter", "input", in, inOffset, count),
        array("reduceScatter", "output", out, outOffset, count), count, DataType.F64, op);
  }

  @Override
  public void allGather(double[] in, int inOffset, double[] out, int outOffset, int count) {
    allGatherChecked(array("allGather", "input", in, inOffset, count),
        array("allGather", "output", out, outOffset, count), count, DataType.F64);
  }

  @Override
  public void allReduce(DoubleBuffer in, DoubleBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    allReduceNow(in, out, count, DataType.F64, op, null);
  }

  @Override
  public Handle allReduceAsync(DoubleBuffer in, DoubleBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    return allReduceChecked(in, out, count, DataType.F64, op, null);
  }

  @Override
  public void broadcast(DoubleBuffer in, DoubleBuffer out, int count, int root) {
    requireTyped("broadcast", in, out, count);
    broadcastChecked(in, out, count, DataType.F64, root);
  }

  @Override
  public void reduceScatter(DoubleBuffer in, DoubleBuffer out, int count, ReduceOp op) {
    requireTyped("reduceScatter", in, out, count);
    reduceScatterChecked(in, out, count, DataType.F64, op);
  }

  @Override
  public void allGather(DoubleBuffer in, DoubleBuffer out, int count) {
    requireTyped("allGather", in, out, count);
    allGatherChecked(in, out, count, DataType.F64);
  }

  @Override
  public void allReduce(int[] in, int inOffset, int[] out, int outOffset, int count, ReduceOp op) {
    allReduceNow(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.I32, op, null);
  }

  @Override
  public Handle allReduceAsync(int[] in, int inOffset, int[] out, int outOffset, int count,
      ReduceOp op) {
    return allReduceChecked(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.I32, op, null);
  }

  @Override
  public void broadcast(int[] in, int inOffset, int[] out, int outOffset, int count, int root) {
    broadcastChecked(array("broadcast", "input", in, inOffset, count),
        array("broadcast", "output", out, outOffset, count), count, DataType.I32, root);
  }

  @Override
  public void reduceScatter(int[] in, int inOffset, int[] out, int outOffset, int count,
      ReduceOp op) {
    reduceScatterChecked(array("reduceScatter", "input", in, inOffset, count),
        array("reduceScatter", "output", out, outOffset, count), count, DataType.I32, op);
  }

  @Override
  public void allGather(int[] in, int inOffset, int[] out, int outOffset, int count) {
    allGatherChecked(array("allGather", "input", in, inOffset, count),
        array("allGather", "output", out, outOffset, count), count, DataType.I32);
  }

  @Override
  public void allReduce(IntBuffer in, IntBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    allReduceNow(in, out, count, DataType.I32, op, null);
  }

  @Override
  public Handle allReduceAsync(IntBuffer in, IntBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    return allReduceChecked(in, out, count, DataType.I32, op, null);
  }

  @Override
  public void broadcast(IntBuffer in, IntBuffer out, int count, int root) {
    requireTyped("broadcast", in, out, count);
    broadcastChecked(in, out, count, DataType.I32, root);
  }

  @Override
  public void reduceScatter(IntBuffer in, IntBuffer out, int count, ReduceOp op) {
    requireTyped("reduceScatter", in, out, count);
    reduceScatterChecked(in, out, count, DataType.I32, op);
  }

  @Override
  public void allGather(IntBuffer in, IntBuffer out, int count) {
    requireTyped("allGather", in, out, count);
    allGatherChecked(in, out, count, DataType.I32);
  }

  @Override
  public void allReduce(long[] in, int inOffset, long[] out, int outOffset, int count, ReduceOp op) {
    allReduceNow(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.I64, op, null);
  }

  @Override
  public Handle allReduceAsync(long[] in, int inOffset, long[] out, int outOffset, int count,
      ReduceOp op) {
    return allReduceChecked(array("allReduce", "input", in, inOffset, count),
        array("allReduce", "output", out, outOffset, count), count, DataType.I64, op, null);
  }

  @Override
  public void broadcast(long[] in, int inOffset, long[] out, int outOffset, int count, int root) {
    broadcastChecked(array("broadcast", "input", in, inOffset, count),
        array("broadcast", "output", out, outOffset, count), count, DataType.I64, root);
  }

  @Override
  public void reduceScatter(long[] in, int inOffset, long[] out, int outOffset, int count,
      ReduceOp op) {
    reduceScatterChecked(array("reduceScatter", "input", in, inOffset, count),
        array("reduceScatter", "output", out, outOffset, count), count, DataType.I64, op);
  }

  @Override
  public void allGather(long[] in, int inOffset, long[] out, int outOffset, int count) {
    allGatherChecked(array("allGather", "input", in, inOffset, count),
        array("allGather", "output", out, outOffset, count), count, DataType.I64);
  }

  @Override
  public void allReduce(LongBuffer in, LongBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    allReduceNow(in, out, count, DataType.I64, op, null);
  }

  @Override
  public Handle allReduceAsync(LongBuffer in, LongBuffer out, int count, ReduceOp op) {
    requireTyped("allReduce", in, out, count);
    return allReduceChecked(in, out, count, DataType.I64, op, null);
  }

  @Override
  public void broadcast(LongBuffer in, LongBuffer out, int count, int root) {
    requireTyped("broadcast", in, out, count);
    broadcastChecked(in, out, count, DataType.I64, root);
  }

  @Override
  public void reduceScatter(LongBuffer in, LongBuffer out, int count, ReduceOp op) {
    requireTyped("reduceScatter", in, out, count);
    reduceScatterChecked(in, out, count, DataType.I64, op);
  }

  @Override
  public void allGather(LongBuffer in, LongBuffer out, int count) {
    requireTyped("allGather", in, out, count);
    allGatherChecked(in, out, count, DataType.I64);
  }

  private FloatBuffer array(String what, String which, float[] a, int offset, int count) {
    requireRange(what, which, a == null ? -1 : a.length, offset, count);
    return FloatBuffer.wrap(a, offset, count).slice();
  }

  private DoubleBuffer array(String what, String which, double[] a, int offset, int count) {
    requireRange(what, which, a == null ? -1 : a.length, offset, count);
    return DoubleBuffer.wrap(a, offset, count).slice();
  }

  private IntBuffer array(String what, String which, int[] a, int offset, int count) {
    requireRange(what, which, a == null ? -1 : a.length, offset, count);
    return IntBuffer.wrap(a, offset, count).slice();
  }

  private LongBuffer array(String what, String which, long[] a, int offset, int count) {
    requireRange(what, which, a == null ? -1 : a.length, offset, count);
    return LongBuffer.wrap(a, offset, count).slice();
  }


  private void requireTyped(String what, Buffer in, Buffer out, int count) {
    if (count < 0) {
      throw new IllegalArgumentException("rank " + rank() + ": " + what + " of " + count
          + " elements");
    }
    requireTyped(what, "input", in, count);
    requireTyped(what, "output", out, count);
  }

  private void requireTyped(String what, String which, Buffer b, int count) {
    if (b == null) {
      throw new IllegalArgumentException("rank " + rank() + ": " + what + ": the " + which
          + " buffer is null");
    }
    if (which.equals("output") && b.isReadOnly()) {
      throw new IllegalArgumentException("rank " + rank() + ": " + what + ": the output buffer"
          + " is read-only");
    }
    if (b.limit() < count) {
      throw new IllegalArgumentException("rank " + rank() + ": " + what + " of " + count
          + " elements; the " + which + " buffer's limit is " + b.limit());
    }
  }

  private void requireRange(String what, String which, int length, int offset, int count) {
    if (length < 0) {
      throw new IllegalArgumentException("rank " + rank() + ": " + what + ": the " + which
          + " array is null");
    }
    if (count < 0 || offset < 0 || (long) offset + count > length) {
      throw new IllegalArgumentException("rank " + rank() + ": " + what + " of " + count
          + " elements at offset " + offset + ": the " + which + " array holds " + length);
    }
  }
}
