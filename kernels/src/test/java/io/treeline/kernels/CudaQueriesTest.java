package io.treeline.kernels;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import jcuda.CudaException;
import org.junit.jupiter.api.Test;

/** "Not finished yet" is an answer, every other driver error stays an error. */
class CudaQueriesTest {
  @Test
  void notReadyMeansNotDoneYet() {
    assertFalse(CudaQueries.notReady(new CudaException("CUDA_ERROR_NOT_READY")));
  }

  @Test
  void anyOtherErrorIsRethrownAsItCame() {
    CudaException fault = new CudaException("CUDA_ERROR_ILLEGAL_ADDRESS");
    assertSame(fault, assertThrows(CudaException.class, () -> CudaQueries.notReady(fault)));
  }
}
