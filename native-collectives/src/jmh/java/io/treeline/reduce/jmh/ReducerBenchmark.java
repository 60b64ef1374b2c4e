package io.treeline.reduce.jmh;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.reduce.HostReducer;
import io.treeline.reduce.Reducer;
import io.treeline.reduce.VectorReducer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Host reducers: {@link #reduce} sums {@code inputs} direct buffers of {@code bytes} each into
 * one, for an AVG-style finish, with the vectorised ({@link VectorReducer}, what
 * {@link Reducer#create()} picks) or the scalar ({@link HostReducer}) reducer.
 * {@link CopyBenchmark} measures memcpy in the same run.
 */
@State(Scope.Thread)
public class ReducerBenchmark {
  @Param({"F32", "BF16", "F64", "I32"})
  public String dtype;

  @Param({"2", "8"})
  public int inputs;

  @Param({"1048576", "33554432"})
  public int bytes;

  @Param({"vector", "scalar"})
  public String impl;

  private Reducer reducer;
  private DataType type;
  private ByteBuffer[] in;
  private long[] offsets;
  private ByteBuffer out;

  @Setup(Level.Trial)
  public void setup() {
    type = DataType.valueOf(dtype);
    reducer = impl.equals("scalar") ? new HostReducer() : Reducer.create();
    if (impl.equals("vector") && !(reducer instanceof VectorReducer)) {
      throw new IllegalStateException("no Vector API in the benchmark JVM: "
          + "--add-modules=jdk.incubator.vector missing");
    }
    in = new ByteBuffer[inputs];
    offsets = new long[inputs];
    Random rnd = new Random(1);
    for (int k = 0; k < inputs; k++) {
      in[k] = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
      for (int i = 0; i + 4 <= bytes; i += 4) {
        in[k].putFloat(i, 0.5f + rnd.nextFloat()); // finite, non-zero in every type's view
      }
    }
    out = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
  }

  @Benchmark
  public ByteBuffer reduce() {
    reducer.reduce(type, ReduceOp.SUM, in, offsets, inputs, out, 0, bytes / type.size(), true,
        inputs);
    return out;
  }
}
