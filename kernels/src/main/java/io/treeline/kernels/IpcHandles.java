package io.treeline.kernels;

import java.lang.reflect.Field;
import jcuda.driver.CUipcEventHandle;
import jcuda.driver.CUipcMemHandle;

/**
 * The one place that reaches the 64 opaque bytes of JCuda's CUDA IPC handles: JCuda 12.0.0 keeps
 * them in a private {@code reserved} field with no accessor, and a handle must cross processes
 * as raw bytes (seed 004: never as strings).
 */
public final class IpcHandles {
  /** CU_IPC_HANDLE_SIZE. */
  public static final int BYTES = 64;
  private static final Field MEM = field(CUipcMemHandle.class);
  private static final Field EVENT = field(CUipcEventHandle.class);

  private IpcHandles() {
  }

  private static Field field(Class<?> c) {
    try {
      Field f = c.getDeclaredField("reserved");
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException e) {
      throw new IllegalStateException("this JCuda's " + c.getSimpleName() + " has no 'reserved' "
          + "field; Treeline reads IPC handles as JCuda 12.0.0 lays them out", e);
    }
  }

  public static byte[] bytes(CUipcMemHandle h) {
    return copy(get(MEM, h));
  }

  public static byte[] bytes(CUipcEventHandle h) {
    return copy(get(EVENT, h));
  }

  public static CUipcMemHandle memHandle(byte[] bytes) {
    CUipcMemHandle h = new CUipcMemHandle();
    set(MEM, h, bytes);
    return h;
  }

  public static CUipcEventHandle eventHandle(byte[] bytes) {
    CUipcEventHandle h = new CUipcEventHandle();
    set(EVENT, h, bytes);
    return h;
  }

  private static byte[] get(Field f, Object h) {
    try {
      return (byte[]) f.get(h);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void set(Field f, Object h, byte[] bytes) {
    if (bytes.length != BYTES) {
      throw new IllegalArgumentException("a CUDA IPC handle is " + BYTES + " bytes, got "
          + bytes.length);
    }
    try {
      f.set(h, copy(bytes));
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] copy(byte[] b) {
    if (b == null || b.length != BYTES) {
      throw new IllegalStateException("JCuda's IPC handle holds " + (b == null ? "no" : b.length)
          + " bytes, expected " + BYTES);
    }
    return b.clone();
  }
}
