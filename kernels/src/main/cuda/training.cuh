// Kernels of one training step of a dense network, all row-major f32 in device memory:
// TF32 tensor-core GEMMs (two tile shapes, four layouts, split-K) with bias / ReLU / ReLU-mask epilogues (the three products of a dense
// layer), the softmax cross-entropy with its gradient, column sums (bias gradients), the fused
// SGD-with-momentum update and the gather of a batch from the resident uint8 data set.
#pragma once
#include <mma.h>

namespace training {

template <bool C, class T, class F> struct pick { using type = T; };
template <class T, class F> struct pick<false, T, F> { using type = F; };

// 16-byte asynchronous copy global -> shared (sm_80+), bypassing L1; and its fences.
__device__ __forceinline__ void cp_async16(float* smem, const float* gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// One GEMM tile shape: a BM x BN block of C per thread block, K in steps of BK, warps of WM x WN
// each (WM/16 x WN/16 wmma 16x16x8 TF32 fragments). A tile of op(A) is kept in shared memory in
// the layout it has in global memory (row-major [BM][BK] for A, column-major [BK][BM] for A^T),
// so 16-byte copies read consecutive addresses in every layout; the fragments load with the
// matching wmma layout. Leading dimensions are padded by 4 floats (wmma's multiple-of-16-bytes
// rule) to shift rows across banks; every fragment pointer stays 32-byte aligned.
template <int BM_, int BN_, int BK_, int WM_, int WN_, bool TA, bool TB>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
  static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
  static constexpr int THREADS = WARPS_M * WARPS_N * 32;
  static constexpr int FM = WM / 16, FN = WN / 16;
  static constexpr int A_LD = TA ? BM + 4 : BK + 4;
  static constexpr int A_SIZE = TA ? BK * (BM + 4) : BM * (BK + 4);
  static constexpr int B_LD = TB ? BK + 4 : BN + 4;
  static constexpr int B_SIZE = TB ? BN * (BK + 4) : BK * (BN + 4);
  static constexpr int STAGE = A_SIZE + B_SIZE;
  static constexpr int EPI_LD = 20;  // per-warp 16 x 16 staging of one accumulator fragment
  static_assert(2 * STAGE >= WARPS_M * WARPS_N * 16 * EPI_LD, "epilogue staging fits");
};

// Copies one BK slice of op(A) and op(B) into shared stage buffers: 16-byte cp.async where the
// four floats are inside the matrix and aligned (vecA / vecB: base 16-byte aligned and leading
// dimension a multiple of 4), plain loads with zeros outside otherwise.
template <class T, bool TA, bool TB>
__device__ __forceinline__ void load_stage(float* As, float* Bs, const float* __restrict__ A,
                                           const float* __restrict__ B, int M, int N, int K,
                                           int lda, int ldb, int row0, int col0, int k0,
                                           bool vecA, bool vecB) {
  const int tid = threadIdx.x;
  // A: !TA -> rows of BM, 4-float groups along k; TA -> rows of BK (k), groups along m
  constexpr int AG = TA ? T::BM / 4 : T::BK / 4;
  constexpr int AR = TA ? T::BK : T::BM;
  for (int e = tid; e < AR * AG; e += T::THREADS) {
    int r = e / AG, g = (e % AG) * 4;
    int gOuter = (TA ? k0 : row0) + r, gInner = (TA ? row0 : k0) + g;
    int outerLim = TA ? K : M, innerLim = TA ? M : K;
    float* dst = As + r * T::A_LD + g;
    const float* src = A + (long long)gOuter * lda + gInner;
    if (vecA && gOuter < outerLim && gInner + 3 < innerLim) {
      cp_async16(dst, src);
    } else {
#pragma unroll
      for (int q = 0; q < 4; q++)
        dst[q] = (gOuter < outerLim && gInner + q < innerLim) ? src[q] : 0.0f;
    }
  }
  // B: !TB -> rows of BK (k), groups along n; TB -> rows of BN (n), groups along k
  constexpr int BG = TB ? T::BK / 4 : T::BN / 4;
  constexpr int BR = TB ? T::BN : T::BK;
  for (int e = tid; e < BR * BG; e += T::THREADS) {
    int r = e / BG, g = (e % BG) * 4;
    int gOuter = (TB ? col0 : k0) + r, gInner = (TB ? k0 : col0) + g;
    int outerLim = TB ? N : K, innerLim = TB ? K : N;
    float* dst = Bs + r * T::B_LD + g;
    const float* src = B + (long long)gOuter * ldb + gInner;
    if (vecB && gOuter < outerLim && gInner + 3 < innerLim) {
      cp_async16(dst, src);
    } else {
#pragma unroll
      for (int q = 0; q < 4; q++)
        dst[q] = (gOuter < outerLim && gInner + q < innerLim) ? src[q] : 0.0f;
    }
  }
}

// C[M x N] = op(A) op(B) (+ bias[N]) (ReLU) (x [mask > 0]), or, with splits > 1, this block's
// share of the K range (blockIdx.z of splits) written unfinished to W[z][M][N] for
// gemm_splitk_finish. Double-buffered: the copy of slice t+1 is in flight while slice t is
// multiplied. Tiles outside the matrix read zeros and write nothing: any M, N, K >= 0.
template <class T, bool TA, bool TB>
__device__ __forceinline__ void gemm_tile(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K, int lda,
                                          int ldb, int ldc, const float* __restrict__ bias,
                                          const float* __restrict__ mask, int ldmask, int relu,
                                          float* __restrict__ W, int splits, int vecA, int vecB) {
  using namespace nvcuda;
  using ALayout = typename pick<TA, wmma::col_major, wmma::row_major>::type;
  using BLayout = typename pick<TB, wmma::col_major, wmma::row_major>::type;
  __shared__ __align__(128) float smem[2 * T::STAGE];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp / T::WARPS_N, wc = warp % T::WARPS_N;
  const int row0 = blockIdx.y * T::BM, col0 = blockIdx.x * T::BN;
  const int tilesK = (K + T::BK - 1) / T::BK;
  const int kt0 = (int)((long long)blockIdx.z * tilesK / splits);
  const int kt1 = (int)((long long)(blockIdx.z + 1) * tilesK / splits);

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[T::FM][T::FN];
#pragma unroll
  for (int i = 0; i < T::FM; i++)
#pragma unroll
    for (int j = 0; j < T::FN; j++) wmma::fill_fragment(acc[i][j], 0.0f);

  if (kt0 < kt1) {
    load_stage<T, TA, TB>(smem, smem + T::A_SIZE, A, B, M, N, K, lda, ldb, row0, col0,
                          kt0 * T::BK, vecA, vecB);
    cp_async_commit();
  }
  for (int kt = kt0; kt < kt1; kt++) {
    float* As = smem + ((kt - kt0) & 1) * T::STAGE;
    float* Bs = As + T::A_SIZE;
    if (kt + 1 < kt1) {
      float* An = smem + ((kt + 1 - kt0) & 1) * T::STAGE;
      load_stage<T, TA, TB>(An, An + T::A_SIZE, A, B, M, N, K, lda, ldb, row0, col0,
                            (kt + 1) * T::BK, vecA, vecB);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < T::BK; kk += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, ALayout> a[T::FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, BLayout> b[T::FN];
#pragma unroll
      for (int i = 0; i < T::FM; i++) {
        int r = wr * T::WM + i * 16;
        wmma::load_matrix_sync(a[i], TA ? As + kk * T::A_LD + r : As + r * T::A_LD + kk, T::A_LD);
#pragma unroll
        for (int t = 0; t < a[i].num_elements; t++) a[i].x[t] = wmma::__float_to_tf32(a[i].x[t]);
      }
#pragma unroll
      for (int j = 0; j < T::FN; j++) {
        int c = wc * T::WN + j * 16;
        wmma::load_matrix_sync(b[j], TB ? Bs + c * T::B_LD + kk : Bs + kk * T::B_LD + c, T::B_LD);
#pragma unroll
        for (int t = 0; t < b[j].num_elements; t++) b[j].x[t] = wmma::__float_to_tf32(b[j].x[t]);
      }
#pragma unroll
      for (int i = 0; i < T::FM; i++)
#pragma unroll
        for (int j = 0; j < T::FN; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // the copy after next overwrites this stage
  }
  // epilogue: each warp stages one fragment at a time in its own 16 x 16 corner of smem
  float* st = smem + warp * 16 * T::EPI_LD;
  float* out = splits > 1 ? W + (long long)blockIdx.z * M * N : C;
  int ldo = splits > 1 ? N : ldc;
#pragma unroll
  for (int i = 0; i < T::FM; i++) {
#pragma unroll
    for (int j = 0; j < T::FN; j++) {
      wmma::store_matrix_sync(st, acc[i][j], T::EPI_LD, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        int gi = row0 + wr * T::WM + i * 16 + r, gj = col0 + wc * T::WN + j * 16 + c;
        if (gi < M && gj < N) {
          float v = st[r * T::EPI_LD + c];
          if (splits == 1) {
            if (bias) v += bias[gj];
            if (relu) v = fmaxf(v, 0.0f);
            if (mask && !(mask[(long long)gi * ldmask + gj] > 0.0f)) v = 0.0f;
          }
          out[(long long)gi * ldo + gj] = v;
        }
      }
      __syncwarp();
    }
  }
}

using Big = Tile<128, 128, 16, 64, 32, false, false>;   // 8 warps
using Small = Tile<64, 64, 32, 32, 32, false, false>;   // 4 warps

}  // namespace training

// The GEMM kernels, one per tile shape and layout: gemm_{big,small}_{nn,nt,tn,tt} (t: the
// operand is read transposed). Grid: ceil(N/BN) x ceil(M/BM) x splits blocks.
#define TREELINE_GEMM(NAME, BM, BN, BK, WM, WN, TA, TB)                                       \
  extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32)                  \
  NAME(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,      \
       int M, int N, int K, int lda, int ldb, int ldc, const float* __restrict__ bias,       \
       const float* __restrict__ mask, int ldmask, int relu, float* __restrict__ W,          \
       int splits, int vecA, int vecB) {                                                     \
    using T = training::Tile<BM, BN, BK, WM, WN, TA, TB>;                                    \
    training::gemm_tile<T, TA, TB>(A, B, C, M, N, K, lda, ldb, ldc, bias, mask, ldmask, relu, \
                                   W, splits, vecA, vecB);                                   \
  }
TREELINE_GEMM(gemm_big_nn, 128, 128, 16, 64, 32, false, false)
TREELINE_GEMM(gemm_big_nt, 128, 128, 16, 64, 32, false, true)
TREELINE_GEMM(gemm_big_tn, 128, 128, 16, 64, 32, true, false)
TREELINE_GEMM(gemm_big_tt, 128, 128, 16, 64, 32, true, true)
TREELINE_GEMM(gemm_small_nn, 64, 64, 32, 32, 32, false, false)
TREELINE_GEMM(gemm_small_nt, 64, 64, 32, 32, 32, false, true)
TREELINE_GEMM(gemm_small_tn, 64, 64, 32, 32, 32, true, false)
TREELINE_GEMM(gemm_small_tt, 64, 64, 32, 32, 32, true, true)
#undef TREELINE_GEMM

// C = sum over s < splits of W[s] (in order, so the result does not depend on the launch), then
// the epilogue (+ bias) (ReLU) (x [mask > 0]): the second half of a split-K GEMM.
extern "C" __global__ void gemm_splitk_finish(const float* __restrict__ W, int splits, int M,
                                              int N, float* __restrict__ C, int ldc,
                                              const float* __restrict__ bias,
                                              const float* __restrict__ mask, int ldmask,
                                              int relu) {
  long long total = (long long)M * N;
  long long step = (long long)gridDim.x * blockDim.x;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int i = (int)(e / N), j = (int)(e % N);
    float v = 0.0f;
    for (int s = 0; s < splits; s++) v += W[s * total + e];
    if (bias) v += bias[j];
    if (relu) v = fmaxf(v, 0.0f);
    if (mask && !(mask[(long long)i * ldmask + j] > 0.0f)) v = 0.0f;
    C[(long long)i * ldc + j] = v;
  }
}

// out[j] = sum_i X[i*ld + j] for j < n: the bias gradient (column sums of dZ), one thread per
// column, rows in order, so the result does not depend on the launch shape.
extern "C" __global__ void col_sum(const float* __restrict__ X, int m, int n, int ld,
                                   float* __restrict__ out) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  float s = 0.0f;
  for (int i = 0; i < m; i++) s += X[(long long)i * ld + j];
  out[j] = s;
}

// Softmax cross-entropy of logits Z[m x c] against labels y (uint8): dZ = (softmax - onehot) *
// scale (skipped when dZ is null), stats[0] = summed loss * lossScale, stats[1] = rows whose
// argmax is the label. One block; each thread takes rows tid, tid + blockDim, ...; the block
// reduction has a fixed order, so the figures are the same on every run.
extern "C" __global__ void softmax_xent(const float* __restrict__ Z, const unsigned char* __restrict__ y,
                                        int m, int c, float* __restrict__ dZ, float scale,
                                        float* __restrict__ stats, float lossScale) {
  __shared__ float sLoss[256];
  __shared__ float sHit[256];
  float loss = 0.0f, hits = 0.0f;
  for (int i = threadIdx.x; i < m; i += blockDim.x) {
    const float* z = Z + (long long)i * c;
    float mx = z[0];
    int arg = 0;
    for (int j = 1; j < c; j++)
      if (z[j] > mx) { mx = z[j]; arg = j; }
    float sum = 0.0f;
    for (int j = 0; j < c; j++) sum += __expf(z[j] - mx);
    int label = y[i];
    loss += logf(sum) - (z[label] - mx);
    hits += arg == label ? 1.0f : 0.0f;
    if (dZ) {
      float inv = 1.0f / sum;
      for (int j = 0; j < c; j++)
        dZ[(long long)i * c + j] = (__expf(z[j] - mx) * inv - (j == label ? 1.0f : 0.0f)) * scale;
    }
  }
  sLoss[threadIdx.x] = loss;
  sHit[threadIdx.x] = hits;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      sLoss[threadIdx.x] += sLoss[threadIdx.x + s];
      sHit[threadIdx.x] += sHit[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    stats[0] = sLoss[0] * lossScale;
    stats[1] = sHit[0];
  }
}

// v = momentum * v + g; w -= lr * v over n parameters (grid-stride). Where epochStats is not
// null, thread 0 also adds the two averaged figures after the gradient (g[n], g[n+1]: mean loss
// and hits) to the epoch's running sums, so the host reads them once an epoch.
extern "C" __global__ void sgd_momentum(float* __restrict__ w, float* __restrict__ v,
                                        const float* __restrict__ g, long long n, float lr,
                                        float momentum, double* __restrict__ epochStats) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float vi = momentum * v[i] + g[i];
    v[i] = vi;
    w[i] -= lr * vi;
  }
  if (epochStats && blockIdx.x == 0 && threadIdx.x == 0) {
    epochStats[0] += g[n];
    epochStats[1] += g[n + 1];
  }
}

// X[q, :] = images[idx_q, :] / 255 and labels[q] = allLabels[idx_q] for q < m, with
// idx_q = order[base + q*stride] (order null: base + q*stride). The data set stays on the GPU;
// a batch is a gather through the epoch's permutation.
extern "C" __global__ void gather_batch(const unsigned char* __restrict__ images,
                                        const unsigned char* __restrict__ allLabels,
                                        const int* __restrict__ order, int base, int stride,
                                        int m, int pixels, float* __restrict__ X,
                                        unsigned char* __restrict__ labels) {
  long long total = (long long)m * pixels;
  long long step = (long long)gridDim.x * blockDim.x;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    int q = (int)(e / pixels);
    int k = (int)(e - (long long)q * pixels);
    long long pos = (long long)base + (long long)q * stride;
    int idx = order ? order[pos] : (int)pos;
    X[e] = images[(long long)idx * pixels + k] * (1.0f / 255.0f);
    if (k == 0) labels[q] = allLabels[idx];
  }
}
