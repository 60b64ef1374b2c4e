package io.treeline.kernels;

import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuStreamQuery;

import jcuda.CudaException;
import jcuda.driver.CUevent;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;

/**
 * Non-blocking completion checks, for waits that poll with a deadline instead of blocking in
 * the driver. With JCuda's exceptions on, "not finished yet" (CUDA_ERROR_NOT_READY) arrives as
 * an exception; here it is {@code false}, and every other error is rethrown.
 */
public final class CudaQueries {
  private static final String NOT_READY = CUresult.stringFor(CUresult.CUDA_ERROR_NOT_READY);

  private CudaQueries() {
  }

  /** Whether everything enqueued on {@code stream} has run. */
  public static boolean done(CUstream stream) {
    try {
      cuStreamQuery(stream);
      return true;
    } catch (CudaException e) {
      return notReady(e);
    }
  }

  /** Whether the work before {@code event}'s last record has run. */
  public static boolean done(CUevent event) {
    try {
      cuEventQuery(event);
      return true;
    } catch (CudaException e) {
      return notReady(e);
    }
  }

  static boolean notReady(CudaException e) {
    if (String.valueOf(e.getMessage()).contains(NOT_READY)) {
      return false;
    }
    throw e;
  }
}
