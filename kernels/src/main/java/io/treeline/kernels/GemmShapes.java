package io.treeline.kernels;

/**
 * The argument rules of the GEMM kernels ({@code gemm_big_*}, {@code gemm_small_*}), apart from the launch so that they are tested
 * without a GPU: a leading dimension covers the row it strides over, so no element of one row
 * is read as part of the next.
 */
public final class GemmShapes {
  private GemmShapes() {
  }

  /**
   * Throws IllegalArgumentException naming the first broken rule of {@code C[m x n] = op(A)
   * op(B)} with {@code op(A)} of {@code m x k}.
   */
  public static void check(boolean transA, int lda, boolean transB, int ldb, int ldc, int m,
      int n, int k, boolean masked, int ldmask) {
    if (m < 0 || n < 0 || k < 0) {
      throw new IllegalArgumentException("GEMM of negative shape " + m + " x " + n + " x " + k);
    }
    if (m == 0 || n == 0) {
      return;
    }
    int aRow = transA ? m : k; // A is k x m when transposed, m x k otherwise
    int bRow = transB ? k : n;
    if (k > 0 && lda < aRow) {
      throw new IllegalArgumentException("lda " + lda + " < " + aRow + " (A " + (transA
          ? k + " x " + m : m + " x " + k) + ")");
    }
    if (k > 0 && ldb < bRow) {
      throw new IllegalArgumentException("ldb " + ldb + " < " + bRow + " (B " + (transB
          ? n + " x " + k : k + " x " + n) + ")");
    }
    if (ldc < n) {
      throw new IllegalArgumentException("ldc " + ldc + " < n " + n);
    }
    if (masked && ldmask < n) {
      throw new IllegalArgumentException("ldmask " + ldmask + " < n " + n);
    }
  }

  /** Floating-point operations of one product (2 m n k). */
  public static double flops(long m, long n, long k) {
    return 2.0 * m * n * k;
  }
}
