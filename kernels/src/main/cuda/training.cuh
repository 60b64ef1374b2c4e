// Kernels of one training step of a dense network, all row-major f32 in device memory:
// a TF32 tensor-core GEMM with bias / ReLU / ReLU-mask epilogues (the three products of a dense
// layer), the softmax cross-entropy with its gradient, column sums (bias gradients), the fused
// SGD-with-momentum update and the gather of a batch from the resident uint8 data set.
#pragma once
#include <mma.h>

namespace training {

constexpr int BM = 64, BN = 64, BK = 16;
constexpr int THREADS = 128; // 4 warps, 2 x 2, each a 32 x 32 tile of 2 x 2 wmma fragments
// padded leading dimensions: multiples of 4 floats (wmma's rule for tf32/f32) that shift rows
// across shared-memory banks; 16-row steps stay 32-byte aligned (load/store_matrix_sync's rule)
constexpr int LDA = BK + 4, LDB = BN + 4, LDC = BN + 4;

}  // namespace training

// C[M x N] = op(A) op(B) (+ bias[N]) (ReLU) (x [mask > 0]), f32 accumulation of TF32 products.
// op(A)(i,k) = transA ? A[k*lda + i] : A[i*lda + k]; op(B)(k,j) = transB ? B[j*ldb + k] :
// B[k*ldb + j]. Tiles outside the matrix read zeros and write nothing, so any M, N, K >= 0 is
// correct; the grid is ceil(N/64) x ceil(M/64) blocks of 128 threads.
extern "C" __global__ void __launch_bounds__(training::THREADS, 4)
gemm_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
          int M, int N, int K, int lda, int ldb, int ldc, int transA, int transB,
          const float* __restrict__ bias, const float* __restrict__ mask, int ldmask, int relu) {
  using namespace nvcuda;
  using namespace training;
  __shared__ __align__(32) float As[BM * LDA];
  __shared__ __align__(32) float Bs[BK * LDB];
  __shared__ __align__(32) float Cs[BM * LDC];
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int wr = warp / 2, wc = warp % 2;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc[2][2];
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += BK) {
    // consecutive threads read consecutive addresses in either layout
    for (int e = tid; e < BM * BK; e += THREADS) {
      int r, c;
      if (transA) { r = e % BM; c = e / BM; } else { r = e / BK; c = e % BK; }
      int gi = row0 + r, gk = k0 + c;
      float v = 0.0f;
      if (gi < M && gk < K) v = transA ? A[(long long)gk * lda + gi] : A[(long long)gi * lda + gk];
      As[r * LDA + c] = wmma::__float_to_tf32(v);
    }
    for (int e = tid; e < BK * BN; e += THREADS) {
      int r, c;
      if (transB) { c = e / BK; r = e % BK; } else { r = e / BN; c = e % BN; }
      int gk = k0 + r, gj = col0 + c;
      float v = 0.0f;
      if (gk < K && gj < N) v = transB ? B[(long long)gj * ldb + gk] : B[(long long)gk * ldb + gj];
      Bs[r * LDB + c] = wmma::__float_to_tf32(v);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b[2];
#pragma unroll
      for (int i = 0; i < 2; i++)
        wmma::load_matrix_sync(a[i], As + (wr * 32 + i * 16) * LDA + kk, LDA);
#pragma unroll
      for (int j = 0; j < 2; j++)
        wmma::load_matrix_sync(b[j], Bs + kk * LDB + wc * 32 + j * 16, LDB);
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads(); // the next tile overwrites As and Bs
  }
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
      wmma::store_matrix_sync(Cs + (wr * 32 + i * 16) * LDC + wc * 32 + j * 16, acc[i][j], LDC,
                              wmma::mem_row_major);
  __syncthreads();
  for (int e = tid; e < BM * BN; e += THREADS) {
    int r = e / BN, c = e % BN;
    int gi = row0 + r, gj = col0 + c;
    if (gi >= M || gj >= N) continue;
    float v = Cs[r * LDC + c];
    if (bias) v += bias[gj];
    if (relu) v = fmaxf(v, 0.0f);
    if (mask && !(mask[(long long)gi * ldmask + gj] > 0.0f)) v = 0.0f;
    C[(long long)gi * ldc + gj] = v;
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
