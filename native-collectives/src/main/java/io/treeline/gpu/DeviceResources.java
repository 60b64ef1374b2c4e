package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuIpcCloseMemHandle;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;

import io.treeline.kernels.CudaModule;
import io.treeline.transport.shm.SharedSegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUstream;

/**
 * Everything a rank of the GPU path must release, filled in as {@link DeviceCommunicator#create}
 * makes it and released by {@link CudaPeerMemory#close()} (the communicator's close, or a failed
 * set-up), in an order that never frees what a later release still uses: the host stage, the
 * peers' mappings and events, this rank's events, buffers and stream, the segments, the module
 * (and with it the context).
 */
final class DeviceResources {
  /** Events of ranks in this process, by segment path: peers in one JVM use them directly. */
  static final Map<String, CUevent[]> LOCAL_EVENTS = new ConcurrentHashMap<>();
  private static final System.Logger LOG = System.getLogger("io.treeline.cuda");

  CudaModule module;
  CUstream stream;
  CUdeviceptr input;
  CUdeviceptr output;
  CUdeviceptr flags;
  CUevent[] events;
  String localKey;
  SharedSegment own;
  SharedSegment[] segments;
  final List<CUdeviceptr> mappings = new ArrayList<>();
  final List<CUevent> peerEvents = new ArrayList<>();
  CUevent[][] eventsOf;
  long[] flagsOf;
  long[] pids;
  /** Every local rank's rank as the bootstrap numbers it (named in errors). */
  int[] ranks;
  HostStage stage;

  void release() {
    if (module != null) {
      cuCtxSetCurrent(module.context());
    }
    if (stage != null) {
      quietly(stage::close);
    }
    for (CUdeviceptr m : mappings) {
      quietly(() -> cuIpcCloseMemHandle(m));
    }
    mappings.clear();
    for (CUevent e : peerEvents) {
      quietly(() -> cuEventDestroy(e));
    }
    peerEvents.clear();
    if (localKey != null) {
      LOCAL_EVENTS.remove(localKey);
    }
    if (events != null) {
      for (CUevent e : events) {
        if (e != null) {
          quietly(() -> cuEventDestroy(e));
        }
      }
    }
    for (CUdeviceptr p : new CUdeviceptr[] {input, output, flags}) {
      if (p != null) {
        quietly(() -> cuMemFree(p));
      }
    }
    if (stream != null) {
      quietly(() -> cuStreamDestroy(stream));
    }
    if (segments != null) {
      for (SharedSegment s : segments) {
        if (s != null && s != own) {
          s.close();
        }
      }
    }
    if (own != null) {
      own.close();
    }
    if (module != null) {
      quietly(module::close);
    }
  }

  private static void quietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.DEBUG, "while releasing GPU resources: " + e);
    }
  }
}
