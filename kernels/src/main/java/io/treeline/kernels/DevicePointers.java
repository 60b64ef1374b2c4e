package io.treeline.kernels;

import java.lang.reflect.Field;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * Device addresses as plain {@code long}s. Kernel launches take their pointer arguments from
 * preallocated {@code long[]}s (so a launch allocates nothing), and a peer's IPC-mapped buffer
 * plus an offset is just an address; JCuda keeps the address of a {@link CUdeviceptr} in private
 * fields, reached here and nowhere else.
 */
public final class DevicePointers {
  private static final Field NATIVE = field(NativePointerObject.class, "nativePointer");
  private static final Field OFFSET = field(Pointer.class, "byteOffset");
  private DevicePointers() {
  }

  private static Field field(Class<?> c, String name) {
    try {
      Field f = c.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException e) {
      throw new IllegalStateException("this JCuda's " + c.getSimpleName() + " has no '" + name
          + "' field", e);
    }
  }

  /** The device address {@code p} denotes (its base plus its byte offset). */
  public static long address(CUdeviceptr p) {
    try {
      return NATIVE.getLong(p) + OFFSET.getLong(p);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A {@link CUdeviceptr} for a raw device address (for driver calls that want one). */
  public static CUdeviceptr at(long address) {
    CUdeviceptr p = new CUdeviceptr();
    try {
      NATIVE.setLong(p, address);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    return p;
  }
}
