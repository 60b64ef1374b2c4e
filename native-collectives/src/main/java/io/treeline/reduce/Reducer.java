package io.treeline.reduce;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import java.nio.ByteBuffer;

/**
 * Elementwise reduce of N direct buffers into one, for every {@link DataType} x {@link ReduceOp}.
 * Inputs are combined in the order given and half types accumulate in f32 and round once, so
 * every implementation gives the same bits for the same inputs. An instance owns scratch
 * memory: not thread-safe, and after construction no call allocates. Give each rank its own.
 *
 * <p>{@link #create()} picks the fastest one this JVM can run: {@link VectorReducer} when the
 * {@code jdk.incubator.vector} module is in the boot layer ({@code --add-modules
 * jdk.incubator.vector}, which {@code ./treeline}, the tests and Spark 4's launcher pass), else
 * the scalar {@link HostReducer}.
 */
public interface Reducer {
  /**
   * {@code dst[i] = src[0][i] op src[1][i] op ... op src[n-1][i]} for {@code i < count}, where
   * element {@code i} of input k starts at byte {@code srcOffset[k] + i * type.size()}. The
   * output may be one of the inputs at the same offset (in place), not a shifted overlap.
   *
   * @param finish when true and {@code op} is AVG, divide the result by {@code divisor} (the
   *     value is final); ignored for other ops
   */
  void reduce(DataType type, ReduceOp op, ByteBuffer[] src, long[] srcOffset, int n,
      ByteBuffer dst, long dstOffset, long count, boolean finish, int divisor);

  /** Two-input form: {@code dst = a op b}, the shape of every receive-and-reduce step. */
  void reduce2(DataType type, ReduceOp op, ByteBuffer a, long aOffset, ByteBuffer b,
      long bOffset, ByteBuffer dst, long dstOffset, long count, boolean finish, int divisor);

  /** {@code dst = src}, or {@code dst = src / divisor} when it finishes an AVG. */
  void copy(DataType type, ReduceOp op, ByteBuffer src, long srcOffset, ByteBuffer dst,
      long dstOffset, long count, boolean finish, int divisor);

  /** Whether {@link #create()} returns the vectorised reducer in this JVM. */
  static boolean vectorAvailable() {
    return VectorSupportCheck.AVAILABLE;
  }

  /** The vectorised reducer when the Vector API is present, else the scalar one. */
  static Reducer create() {
    if (VectorSupportCheck.AVAILABLE) {
      try {
        // by name: VectorReducer links against jdk.incubator.vector, absent without the flag
        return (Reducer) Class.forName("io.treeline.reduce.VectorReducer")
            .getDeclaredConstructor().newInstance();
      } catch (ReflectiveOperationException | LinkageError e) {
        return new HostReducer();
      }
    }
    return new HostReducer();
  }

  /** Holder so the module look-up runs once. */
  final class VectorSupportCheck {
    static final boolean AVAILABLE = ModuleLayer.boot().findModule("jdk.incubator.vector")
        .isPresent();

    private VectorSupportCheck() {
    }
  }
}
