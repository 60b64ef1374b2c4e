package io.treeline.kernels;

import java.lang.reflect.Field;
import jcuda.NativePointerObject;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;

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

  /**
   * The driver handle a JCuda object wraps ({@code CUstream}, {@code CUevent}, ...), as a
   * {@code long}: what a user-facing API passes instead of a JCuda type.
   */
  public static long handle(NativePointerObject o) {
    try {
      return NATIVE.getLong(o);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A {@link CUstream} for a driver stream handle (from {@link #handle}); it owns nothing. */
  public static CUstream stream(long handle) {
    CUstream s = new CUstream();
    try {
      NATIVE.setLong(s, handle);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
    return s;
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
