package io.treeline.reduce.jmh;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The baseline of {@link ReducerBenchmark}: {@link #memcpy} copies one direct buffer into
 * another ({@code ByteBuffer.put}, a plain memcpy) and {@link #arraycopy} a heap array
 * ({@code System.arraycopy}), for the same sizes.
 */
@State(Scope.Thread)
public class CopyBenchmark {
  @Param({"1048576", "33554432"})
  public int bytes;

  private ByteBuffer src;
  private ByteBuffer dst;
  private byte[] heapSrc;
  private byte[] heapDst;

  @Setup(Level.Trial)
  public void setup() {
    src = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    dst = ByteBuffer.allocateDirect(bytes).order(ByteOrder.nativeOrder());
    for (int i = 0; i < bytes; i += 8) {
      src.putLong(i, i * 0x9E3779B97F4A7C15L);
    }
    heapSrc = new byte[bytes];
    heapDst = new byte[bytes];
  }

  @Benchmark
  public ByteBuffer memcpy() {
    dst.put(0, src, 0, bytes);
    return dst;
  }

  @Benchmark
  public byte[] arraycopy() {
    System.arraycopy(heapSrc, 0, heapDst, 0, bytes);
    return heapDst;
  }
}
