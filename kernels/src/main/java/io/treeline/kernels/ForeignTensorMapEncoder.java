package io.treeline.kernels;

import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import jdk.incubator.foreign.CLinker;
import jdk.incubator.foreign.FunctionDescriptor;
import jdk.incubator.foreign.MemoryAccess;
import jdk.incubator.foreign.MemoryAddress;
import jdk.incubator.foreign.MemorySegment;
import jdk.incubator.foreign.ResourceScope;
import jdk.incubator.foreign.SymbolLookup;

/**
 * {@code cuTensorMapEncodeTiled} of the CUDA driver, called through {@code jdk.incubator.foreign}
 * (JDK 17's foreign linker): JCuda 12.0.0 binds no tensor-map function. Loaded by name from
 * {@link TensorMaps} only where the module is in the boot layer, so nothing else links against
 * the incubator API. The JVM needs {@code --add-modules=jdk.incubator.foreign
 * --enable-native-access=ALL-UNNAMED}; without the second flag the linker throws
 * {@link IllegalCallerException}, which {@link TensorMaps} reports as the reason the TMA kernels
 * are off.
 *
 * <p>The driver library is the one the process already mapped (JCuda loads it on
 * {@code cuInit}), found in {@code /proc/self/maps}; the argument arrays are native memory
 * allocated once, so an encode allocates nothing but is serialised (it runs once per distinct
 * operand: {@link TensorMaps} caches the maps).
 */
final class ForeignTensorMapEncoder implements TensorMaps.Encoder {
  private static final int CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7;
  private static final int CU_TENSOR_MAP_INTERLEAVE_NONE = 0;
  private static final int CU_TENSOR_MAP_SWIZZLE_128B = 3;
  private static final int CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3;
  private static final int CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0;

  private final MethodHandle encode;
  private final MemorySegment map;
  private final MemorySegment dims;
  private final MemorySegment strides;
  private final MemorySegment box;
  private final MemorySegment elementStrides;
  private final String library;

  /** Binds the function in the driver library this process mapped; throws with the reason. */
  ForeignTensorMapEncoder() {
    this(mappedDriver());
  }

  ForeignTensorMapEncoder(Path driver) {
    System.load(driver.toString());
    MemoryAddress symbol = SymbolLookup.loaderLookup().lookup("cuTensorMapEncodeTiled")
        .orElseThrow(() -> new IllegalStateException(driver + " has no cuTensorMapEncodeTiled "
            + "(a driver older than CUDA 12.0)"))
        .address();
    // CUresult (CUtensorMap*, CUtensorMapDataType, cuuint32_t rank, void* globalAddress,
    // const cuuint64_t* globalDim, const cuuint64_t* globalStrides, const cuuint32_t* boxDim,
    // const cuuint32_t* elementStrides, interleave, swizzle, l2Promotion, oobFill)
    encode = CLinker.getInstance().downcallHandle(symbol,
        MethodType.methodType(int.class, MemoryAddress.class, int.class, int.class,
            MemoryAddress.class, MemoryAddress.class, MemoryAddress.class, MemoryAddress.class,
            MemoryAddress.class, int.class, int.class, int.class, int.class),
        FunctionDescriptor.of(CLinker.C_INT, CLinker.C_POINTER, CLinker.C_INT, CLinker.C_INT,
            CLinker.C_POINTER, CLinker.C_POINTER, CLinker.C_POINTER, CLinker.C_POINTER,
            CLinker.C_POINTER, CLinker.C_INT, CLinker.C_INT, CLinker.C_INT, CLinker.C_INT));
    ResourceScope scope = ResourceScope.globalScope(); // 176 bytes for the process's life
    map = MemorySegment.allocateNative(TensorMaps.BYTES, 64, scope);
    dims = MemorySegment.allocateNative(16, 8, scope);
    strides = MemorySegment.allocateNative(8, 8, scope);
    box = MemorySegment.allocateNative(8, 4, scope);
    elementStrides = MemorySegment.allocateNative(8, 4, scope);
    MemoryAccess.setIntAtIndex(elementStrides, 0, 1);
    MemoryAccess.setIntAtIndex(elementStrides, 1, 1);
    library = driver.toString();
  }

  @Override
  public synchronized int encode(long address, int rows, int cols, int ld, int boxRows,
      byte[] out) {
    MemoryAccess.setLongAtIndex(dims, 0, cols);
    MemoryAccess.setLongAtIndex(dims, 1, rows);
    MemoryAccess.setLongAtIndex(strides, 0, 4L * ld);
    MemoryAccess.setIntAtIndex(box, 0, TensorMaps.BOX_COLS);
    MemoryAccess.setIntAtIndex(box, 1, boxRows);
    int rc;
    try {
      rc = (int) encode.invokeExact(map.address(), CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
          MemoryAddress.ofLong(address), dims.address(), strides.address(), box.address(),
          elementStrides.address(), CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    } catch (Throwable t) {
      throw new IllegalStateException("cuTensorMapEncodeTiled through " + library, t);
    }
    if (rc == 0) {
      MemorySegment.ofArray(out).copyFrom(map);
    }
    return rc;
  }

  @Override
  public String toString() {
    return "cuTensorMapEncodeTiled of " + library + " (jdk.incubator.foreign)";
  }

  /** The CUDA driver library in this process's mappings (loaded by JCuda's cuInit). */
  static Path mappedDriver() {
    List<String> maps;
    try {
      maps = Files.readAllLines(Path.of("/proc/self/maps"));
    } catch (IOException e) {
      throw new IllegalStateException("cannot read /proc/self/maps to find the CUDA driver", e);
    }
    for (String line : maps) {
      int slash = line.indexOf('/');
      if (slash >= 0 && line.contains("/libcuda.so")) {
        return Path.of(line.substring(slash).trim());
      }
    }
    throw new IllegalStateException("no libcuda.so mapped in this process (cuInit not called, "
        + "or no CUDA driver)");
  }
}
