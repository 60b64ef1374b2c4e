// Check-and-time harness of the GEMM kernels (no JVM, no Maven: the GPU machine has neither).
// For each shape and layout it runs the wmma kernels of training.cuh (launched as
// TrainingKernels.gemm launches them: shape() picks 128 x 128 tiles or 64 x 64 tiles with
// split-K) and the Hopper wgmma kernels of gemm_sm90.cuh (launched as TrainingKernels.gemm90
// launches them, forced on even where TrainingKernels would not pick them), compares both with a
// float64 host product (every element of the small ones, 4096 sampled elements, edges included,
// of the large ones), and times both (median of 5 rounds of back-to-back launches between CUDA
// events), beside the TMA kernels gemm90t*_* of gemm_sm90_next.cuh (tma2, tma3, ss) at the same
// plan and, for the large products, other block widths and splits. Build: build-gemm-check.sh
// (static CUDA runtime, sm_90a; cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion).
// Usage:
//   gemm_check [--quick] [--old-plan] [--clusters] [NAME...]   (--quick: correctness only, one
//     timed launch; --old-plan: without hopperShape's 256-wide split; --clusters: the cluster
//     kernels gemm90{c,r,q}_* too; NAME: only the shapes whose name starts with one of these)
// Exit status 0 when every wgmma result is within the TF32 bound, 1 otherwise.
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "../../main/cuda/training.cuh"
#define TREELINE_GEMM90_CLUSTER_VARIANTS  // gemm90r_*, gemm90q_*: the other cluster shapes
#include "../../main/cuda/gemm_sm90.cuh"
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled (the driver's, through the runtime)
#include "gemm_sm90_next.cuh"  // gemm90t*: TMA + mbarrier pipeline + warp specialisation

static const char* g_current = "setup";  // the shape and path under way, for error lines
#define CK(x)                                                                           \
  do {                                                                                  \
    cudaError_t e_ = (x);                                                               \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "CUDA error %s at %s:%d (%s): %s\n", cudaGetErrorName(e_), __FILE__, \
              __LINE__, g_current, cudaGetErrorString(e_));                             \
      fflush(stdout);                                                                   \
      exit(2);                                                                          \
    }                                                                                   \
  } while (0)

typedef void (*GemmFn)(const float*, const float*, float*, int, int, int, int, int, int,
                       const float*, const float*, int, int, float*, int, int, int);
typedef void (*Gemm90Fn)(const float*, const float*, float*, int, int, int, int, int, int,
                         const float*, const float*, int, int, float*, int);

static int g_sms = 132;
static bool g_wideSplit = true;
static bool g_clusters = false;  // --clusters: the cluster kernels gemm90{c,r,q}_* too  // --old-plan: the plan before the 256-wide split (false)
static float* g_work = nullptr;    // split-K partial sums, 4 Mi floats (TrainingKernels)
static float* g_trans = nullptr;   // the transposed B of a TN product
static const long long WORK_FLOATS = 4LL << 20;
static const long long TRANS_FLOATS = 16LL << 20;

// ---- the wmma path, as TrainingKernels.shape / gemm pick it ----
static void old_shape(int m, int n, int k, int& splits, bool& big) {
  long long bigTiles = (long long)((m + 127) / 128) * ((n + 127) / 128);
  if (bigTiles * 4 >= 3LL * g_sms) { splits = 1; big = true; return; }
  long long smallTiles = (long long)((m + 63) / 64) * ((n + 63) / 64);
  long long slices = (k + 31) / 32;
  long long s = std::min(std::min(2LL * g_sms / smallTiles, 16LL), slices / 4);
  s = std::min(s, WORK_FLOATS / ((long long)m * n));
  splits = (int)std::max(1LL, s);
  big = false;
}

static void launch_old(const float* A, bool ta, int lda, const float* B, bool tb, int ldb,
                       float* C, int ldc, int m, int n, int k, const float* bias, bool relu,
                       const float* mask, int ldmask) {
  static GemmFn bigs[4] = {gemm_big_nn, gemm_big_tn, gemm_big_nt, gemm_big_tt};
  static GemmFn smalls[4] = {gemm_small_nn, gemm_small_tn, gemm_small_nt, gemm_small_tt};
  int splits; bool big;
  old_shape(m, n, k, splits, big);
  int vecA = ((uintptr_t)A & 15) == 0 && (lda & 3) == 0;
  int vecB = ((uintptr_t)B & 15) == 0 && (ldb & 3) == 0;
  int layout = (ta ? 1 : 0) + (tb ? 2 : 0);
  float* W = splits > 1 ? g_work : nullptr;
  if (big) {
    dim3 grid((n + 127) / 128, (m + 127) / 128, 1);
    bigs[layout]<<<grid, 256>>>(A, B, C, m, n, k, lda, ldb, ldc, bias, mask, ldmask, relu, W, 1,
                                vecA, vecB);
    return;
  }
  dim3 grid((n + 63) / 64, (m + 63) / 64, splits);
  smalls[layout]<<<grid, 128>>>(A, B, C, m, n, k, lda, ldb, ldc, bias, mask, ldmask, relu, W,
                                splits, vecA, vecB);
  if (splits > 1) {
    long long total = (long long)m * n;
    int blocks = (int)std::max(1LL, std::min((long long)g_sms * 4, (total + 255) / 256));
    gemm_splitk_finish<<<blocks, 256>>>(W, splits, m, n, C, ldc, bias, mask, ldmask, relu);
  }
}

// ---- the wgmma path, as TrainingKernels.shape90 / gemm90 pick it (keep the two in step) ----
struct Plan90 {
  bool ok;
  int bs, splits, rdim, sdim;
  const char* why;
  int cl;  // 0: gemm90_* (no cluster); 1, 2, 3: gemm90c_* (2 x 1 share S), gemm90r_* (1 x 2
          // share R), gemm90q_* (2 x 2 share both)
};
static const int CL_X[4] = {1, 2, 1, 2}, CL_Y[4] = {1, 1, 2, 2};
static const char* CL_NAME[4] = {"wgmma", "c 2x1", "r 1x2", "q 2x2"};

static Plan90 plan90(bool ta, bool tb, int m, int n, int k) {
  Plan90 p = {false, 128, 1, 0, 0, "", 0};
  if (k == 0 || m == 0 || n == 0) { p.why = "empty"; return p; }
  bool nn = !ta && !tb;
  p.rdim = nn ? n : m;  // NN: R = B, S = A; NT, TT, TN (as TT): R = A, S = B
  p.sdim = nn ? m : n;
  if (ta && !tb && (long long)n * ((k + 3) / 4 * 4) > TRANS_FLOATS) {
    p.why = "transposed B too large";
    return p;
  }
  long long r = (p.rdim + 127) / 128;
  long long t256 = r * ((p.sdim + 255) / 256);
  long long t128 = r * ((p.sdim + 127) / 128);
  p.bs = t256 >= g_sms && k >= 1024 ? 256 : 128; // TrainingKernels.HOPPER_WIDE_MIN_K
  long long blocks = p.bs == 256 ? t256 : t128;
  long long tilesK = (k + 31) / 32;
  long long s = 1;
  if (g_wideSplit && k >= 1024 && t128 * 2 > g_sms && t256 * 2 <= g_sms) {
    // TrainingKernels.hopperShape: 128-wide blocks would run unsplit short of two waves, the
    // 256-wide ones split K to fill the machine
    p.bs = 256;
    s = std::min(std::min((long long)g_sms / t256, 16LL), tilesK / 4);
    s = std::max(1LL, std::min(s, WORK_FLOATS / ((long long)m * n)));
  } else if (blocks * 2 <= g_sms) {
    s = std::min(std::min((long long)g_sms / blocks, 16LL), tilesK / 4);
    s = std::min(s, WORK_FLOATS / ((long long)m * n));
    s = std::max(1LL, s);
  }
  p.splits = (int)s;
  p.ok = true;
  return p;
}

static void launch_new(const Plan90& p, const float* A, bool ta, int lda, const float* B,
                       bool tb, int ldb, float* C, int ldc, int m, int n, int k,
                       const float* bias, bool relu, const float* mask, int ldmask) {
  static Gemm90Fn fns[4][3][2] = {{{gemm90_nt_128, gemm90_nt_256},
                                   {gemm90_nn_128, gemm90_nn_256},
                                   {gemm90_tt_128, gemm90_tt_256}},
                                  {{gemm90c_nt_128, gemm90c_nt_256},
                                   {gemm90c_nn_128, gemm90c_nn_256},
                                   {gemm90c_tt_128, gemm90c_tt_256}},
                                  {{gemm90r_nt_128, gemm90r_nt_256},
                                   {gemm90r_nn_128, gemm90r_nn_256},
                                   {gemm90r_tt_128, gemm90r_tt_256}},
                                  {{gemm90q_nt_128, gemm90q_nt_256},
                                   {gemm90q_nn_128, gemm90q_nn_256},
                                   {gemm90q_tt_128, gemm90q_tt_256}}};
  if (ta && !tb) {  // TN: B [k][n] -> Bt [n][k], then TT
    int ldt = (k + 3) / 4 * 4;
    dim3 grid((n + 31) / 32, (k + 31) / 32);
    gemm90_transpose<<<grid, dim3(32, 8)>>>(B, k, n, ldb, g_trans, ldt);
    B = g_trans;
    ldb = ldt;
    tb = true;
  }
  int which = (!ta && tb) ? 0 : (!ta && !tb) ? 1 : 2;
  Gemm90Fn f = fns[p.cl][which][p.bs == 256 ? 1 : 0];
  int smem = p.cl == 0 ? (p.bs == 256 ? sm90::Cfg<256>::SMEM : sm90::Cfg<128>::SMEM)
                       : (p.bs == 256 ? sm90::smem_cluster<256>() : sm90::smem_cluster<128>());
  float* W = p.splits > 1 ? g_work : nullptr;
  int gx = (p.rdim + 127) / 128, gy = (p.sdim + p.bs - 1) / p.bs;
  gx = (gx + CL_X[p.cl] - 1) / CL_X[p.cl] * CL_X[p.cl];  // clusters: padded grid
  gy = (gy + CL_Y[p.cl] - 1) / CL_Y[p.cl] * CL_Y[p.cl];
  dim3 grid(gx, gy, p.splits);
  f<<<grid, sm90::THREADS, smem>>>(A, B, C, m, n, k, lda, ldb, ldc, bias, mask, ldmask, relu, W,
                                   p.splits);
  if (p.splits > 1) {
    long long total = (long long)m * n;
    int blocks = (int)std::max(1LL, std::min((long long)g_sms * 4, (total + 255) / 256));
    gemm_splitk_finish<<<blocks, 256>>>(W, p.splits, m, n, C, ldc, bias, mask, ldmask, relu);
  }
}

// ---- the TMA kernels of gemm_sm90_next.cuh (gemm90t*), harness only ----
typedef void (*Gemm90TFn)(const CUtensorMap, const CUtensorMap, float*, int, int, int, int,
                          const float*, const float*, int, int, float*, int);
static PFN_cuTensorMapEncodeTiled_v12000 g_encode = nullptr;
static float* g_trans2 = nullptr;  // A^T of a TN product in the "ss2" variant
static float* g_pre = nullptr;     // B^T of an NN product, made once per shape ("ss-pre")
static bool g_preOk = false;
// 2-D FP32 tensor map of a row-major [rows][cols] matrix (leading dimension ld floats), box
// {32 cols, boxRows}, 128-byte swizzle, zeros outside; cached (the harness reuses buffers)
struct MapKey { const void* p; int rows, cols, ld, box; };
static std::vector<std::pair<MapKey, CUtensorMap>> g_maps;
static CUtensorMap tmap(const float* p, int rows, int cols, int ld, int boxRows) {
  for (auto& e : g_maps)
    if (e.first.p == p && e.first.rows == rows && e.first.cols == cols && e.first.ld == ld &&
        e.first.box == boxRows)
      return e.second;
  CUtensorMap m;
  cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
  cuuint64_t strides[1] = {(cuuint64_t)ld * 4};
  cuuint32_t box[2] = {32, (cuuint32_t)boxRows};
  cuuint32_t es[2] = {1, 1};
  CUresult r = g_encode(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)p, dims, strides, box, es,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "cuTensorMapEncodeTiled failed (%d) at %s: rows %d cols %d ld %d box %d\n",
            (int)r, g_current, rows, cols, ld, boxRows);
    exit(2);
  }
  if (g_maps.size() > 64) g_maps.clear();
  g_maps.push_back({{p, rows, cols, ld, boxRows}, m});
  return m;
}
// TMA variants: nwg consumer warpgroups (2 or 3); mode 0: the layout's own kernel (NT: both
// operands through descriptors; NN, TT: R fragments from registers; TN: B transposed first, as
// gemm90, then TT), 1 ("ss-pre", NN only): NT kernel on B^T made once outside the timing (what
// a trainer keeping its weights transposed would run), 2 ("ss2", TN only): A and B both
// transposed (timed), then the NT kernel. Register-A kernels are built 128-wide only (bs 256 ->
// 128), the 3-warpgroup ones too.
static int tma_bs(int nwg, int mode, bool ta, bool tb, int bs) {
  bool ss = (!ta && tb) || mode != 0;
  return (ss && nwg == 2) ? bs : 128;
}
static void launch_tma(int nwg, int mode, int bs, int splits, const float* A, bool ta, int lda,
                       const float* B, bool tb, int ldb, float* C, int ldc, int m, int n, int k,
                       const float* bias, bool relu, const float* mask, int ldmask) {
  bs = tma_bs(nwg, mode, ta, tb, bs);
  int ldk = (k + 3) / 4 * 4;
  if (mode == 1) {  // NN on the pre-transposed B
    B = g_pre; ldb = ldk; tb = true;
  } else if (mode == 2) {  // TN: A [k][m] -> [m][k], B [k][n] -> [n][k]
    gemm90_transpose<<<dim3((m + 31) / 32, (k + 31) / 32), dim3(32, 8)>>>(A, k, m, lda, g_trans2, ldk);
    gemm90_transpose<<<dim3((n + 31) / 32, (k + 31) / 32), dim3(32, 8)>>>(B, k, n, ldb, g_trans, ldk);
    A = g_trans2; lda = ldk; ta = false;
    B = g_trans; ldb = ldk; tb = true;
  } else if (ta && !tb) {
    gemm90_transpose<<<dim3((n + 31) / 32, (k + 31) / 32), dim3(32, 8)>>>(B, k, n, ldb, g_trans, ldk);
    B = g_trans; ldb = ldk; tb = true;
  }
  const int br = 64 * nwg;
  Gemm90TFn f;
  int smem, threads = 128 * nwg + 128, rdim, sdim;
  CUtensorMap mr, ms;
  if (!ta && tb) {  // NT: R = A [m][k], S = B [n][k]
    f = nwg == 2 ? (bs == 256 ? gemm90t2_ss_256 : gemm90t2_ss_128) : gemm90t3_ss_128;
    rdim = m; sdim = n;
    mr = tmap(A, m, k, lda, br);
    ms = tmap(B, n, k, ldb, bs);
  } else if (!ta && !tb) {  // NN: R = B [k][n], S = A [m][k]
    f = nwg == 2 ? gemm90t2_rst_128 : gemm90t3_rst_128;
    rdim = n; sdim = m;
    mr = tmap(B, k, n, ldb, 32);
    ms = tmap(A, m, k, lda, bs);
  } else {  // TT: R = A [k][m], S = B [n][k]
    f = nwg == 2 ? gemm90t2_rs_128 : gemm90t3_rs_128;
    rdim = m; sdim = n;
    mr = tmap(A, k, m, lda, 32);
    ms = tmap(B, n, k, ldb, bs);
  }
  smem = nwg == 2 ? (bs == 256 ? sm90n::TCfg<2, 256>::SMEM : sm90n::TCfg<2, 128>::SMEM)
                  : sm90n::TCfg<3, 128>::SMEM;
  float* W = splits > 1 ? g_work : nullptr;
  dim3 grid((rdim + br - 1) / br, (sdim + bs - 1) / bs, splits);
  f<<<grid, threads, smem>>>(mr, ms, C, rdim, sdim, k, ldc, bias, mask, ldmask, relu, W, splits);
  if (splits > 1) {
    long long total = (long long)m * n;
    int blocks = (int)std::max(1LL, std::min((long long)g_sms * 4, (total + 255) / 256));
    gemm_splitk_finish<<<blocks, 256>>>(W, splits, m, n, C, ldc, bias, mask, ldmask, relu);
  }
}
struct TmaVar { int nwg, mode; };
static TmaVar g_tv = {2, 0};  // the TMA variant check_and_time runs when path == 2

// ---- host side ----
static unsigned long long g_rng = 0x9E3779B97F4A7C15ULL;
static float urand() {
  g_rng = g_rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((g_rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

struct Case {
  const char* name;
  int m, n, k;
  bool ta, tb;
  bool pad;   // leading dimensions rounded up to a multiple of 4 (else tight, as the trainer)
  int epi;    // 0 none, 1 bias + ReLU, 2 bias + mask
};

struct Result {
  double err;   // max |c - ref| / sum |a||b| over checked elements
  double worst; // max |c - ref| / tolerance
  float ms;
};

static double g_tolScale;  // 2^-9: TF32 truncation of both inputs

static Result check_and_time(const Case& c, int path, const Plan90& p, bool quick,
                             const float* dA, const float* dB, float* dC, const float* dBias,
                             const float* dMask, const std::vector<float>& A,
                             const std::vector<float>& B, const std::vector<float>& bias,
                             const std::vector<float>& mask, int lda, int ldb, int ldc) {
  int m = c.m, n = c.n, k = c.k;
  const float* bb = c.epi ? dBias : nullptr;
  const float* mm = c.epi == 2 ? dMask : nullptr;
  bool relu = c.epi == 1;
  static char where[96];
  static const char* MODE[3] = {"", " ss-pre", " ss2"};
  if (path == 2)
    snprintf(where, sizeof where, "%s tma%d%s BS %d splits %d", c.name, g_tv.nwg, MODE[g_tv.mode],
             tma_bs(g_tv.nwg, g_tv.mode, c.ta, c.tb, p.bs), p.splits);
  else
    snprintf(where, sizeof where, "%s %s BS %d splits %d", c.name,
             path ? CL_NAME[p.cl] : "wmma", p.bs, p.splits);
  g_current = where;
  auto run = [&]() {
    if (path == 2)
      launch_tma(g_tv.nwg, g_tv.mode, p.bs, p.splits, dA, c.ta, lda, dB, c.tb, ldb, dC, ldc, m, n,
                 k, bb, relu, mm, n);
    else if (path == 1)
      launch_new(p, dA, c.ta, lda, dB, c.tb, ldb, dC, ldc, m, n, k, bb, relu, mm, n);
    else
      launch_old(dA, c.ta, lda, dB, c.tb, ldb, dC, ldc, m, n, k, bb, relu, mm, n);
  };
  CK(cudaMemset(dC, 0xFF, (size_t)m * ldc * 4));  // NaN: an element never written fails
  run();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> C((size_t)m * ldc);
  CK(cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
  // elements to check: all, or 4096 sampled with the four corners and the last row / column
  std::vector<std::pair<int, int>> idx;
  if ((long long)m * n * k <= (1LL << 27) && (long long)m * n <= (1 << 20)) {
    for (int i = 0; i < m; i++)
      for (int j = 0; j < n; j++) idx.push_back({i, j});
  } else {
    unsigned long long s = 12345;
    for (int q = 0; q < 4096; q++) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      int i = (int)((s >> 33) % m);
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      int j = (int)((s >> 33) % n);
      if (q < 64) i = m - 1 - q % std::min(m, 8);
      else if (q < 128) j = n - 1 - q % std::min(n, 8);
      idx.push_back({i, j});
    }
    idx.push_back({0, 0}); idx.push_back({0, n - 1}); idx.push_back({m - 1, 0});
    idx.push_back({m - 1, n - 1});
  }
  Result r = {0, 0, 0};
  int shown = 0;
  for (auto& e : idx) {
    int i = e.first, j = e.second;
    double dot = 0, mag = 0;
    for (int q = 0; q < k; q++) {
      double a = c.ta ? A[(size_t)q * lda + i] : A[(size_t)i * lda + q];
      double b = c.tb ? B[(size_t)j * ldb + q] : B[(size_t)q * ldb + j];
      dot += a * b;
      mag += std::fabs(a * b);
    }
    if (c.epi) { dot += bias[j]; mag += std::fabs(bias[j]); }
    if (relu) dot = std::max(dot, 0.0);
    if (c.epi == 2 && !(mask[(size_t)i * n + j] > 0.0f)) dot = 0;
    double got = C[(size_t)i * ldc + j];
    double diff = std::fabs(got - dot);
    if (std::isnan(got)) diff = INFINITY;
    double tol = (g_tolScale + k * std::ldexp(1.0, -24)) * mag + 1e-6;
    r.err = std::max(r.err, diff / (mag + 1e-30));
    r.worst = std::max(r.worst, diff / tol);
    if (diff > tol && shown < 3) {  // the first mismatches, for a diagnosis
      printf("  mismatch %s: C[%d][%d] = %.7g, float64 %.7g (sum|ab| %.4g)\n", g_current, i, j,
             got, dot, mag);
      shown++;
    }
  }
  // timing
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int w = 0; w < 3; w++) run();
  CK(cudaEventRecord(e0));
  run();
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float one;
  CK(cudaEventElapsedTime(&one, e0, e1));
  if (quick) {
    r.ms = one;
  } else {
    int reps = std::max(3, std::min(200, (int)(20.0f / std::max(one, 1e-3f))));
    std::vector<float> rounds;
    for (int round = 0; round < 5; round++) {
      CK(cudaEventRecord(e0));
      for (int q = 0; q < reps; q++) run();
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float t;
      CK(cudaEventElapsedTime(&t, e0, e1));
      rounds.push_back(t / reps);
    }
    std::sort(rounds.begin(), rounds.end());
    r.ms = rounds[2];
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return r;
}

int main(int argc, char** argv) {
  bool quick = false;
  std::vector<std::string> only;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0) quick = true;
    else if (strcmp(argv[i], "--old-plan") == 0) g_wideSplit = false;
    else if (strcmp(argv[i], "--clusters") == 0) g_clusters = true;
    else only.push_back(argv[i]);
  }
  g_tolScale = std::ldexp(1.0, -9);
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  int drv = 0;
  CK(cudaDriverGetVersion(&drv));
  printf("device %s, cc %d.%d, %d SMs, driver %d\n", prop.name, prop.major, prop.minor, g_sms,
         drv);
  if (prop.major != 9 || prop.minor != 0) {
    printf("not compute capability 9.0: the sm_90a kernels cannot run here\n");
    return 3;
  }
  {
    Gemm90Fn f128[] = {gemm90_nt_128, gemm90_nn_128, gemm90_tt_128};
    Gemm90Fn f256[] = {gemm90_nt_256, gemm90_nn_256, gemm90_tt_256};
    Gemm90Fn c128[] = {gemm90c_nt_128, gemm90c_nn_128, gemm90c_tt_128, gemm90r_nt_128,
                       gemm90r_nn_128, gemm90r_tt_128, gemm90q_nt_128, gemm90q_nn_128,
                       gemm90q_tt_128};
    Gemm90Fn c256[] = {gemm90c_nt_256, gemm90c_nn_256, gemm90c_tt_256, gemm90r_nt_256,
                       gemm90r_nn_256, gemm90r_tt_256, gemm90q_nt_256, gemm90q_nn_256,
                       gemm90q_tt_256};
    for (Gemm90Fn f : f128)
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sm90::Cfg<128>::SMEM));
    for (Gemm90Fn f : f256)
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sm90::Cfg<256>::SMEM));
    for (Gemm90Fn f : c128)
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sm90::smem_cluster<128>()));
    for (Gemm90Fn f : c256)
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sm90::smem_cluster<256>()));
  }
  CK(cudaMalloc(&g_work, WORK_FLOATS * 4));
  CK(cudaMalloc(&g_trans, TRANS_FLOATS * 4));
  CK(cudaMalloc(&g_trans2, TRANS_FLOATS * 4));
  CK(cudaMalloc(&g_pre, TRANS_FLOATS * 4));
  {
    cudaDriverEntryPointQueryResult q;
    void* fn = nullptr;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !fn) {
      fprintf(stderr, "no cuTensorMapEncodeTiled in the driver\n");
      return 2;
    }
    g_encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
    Gemm90TFn t128[] = {gemm90t2_ss_128, gemm90t2_rs_128, gemm90t2_rst_128};
    Gemm90TFn t3[] = {gemm90t3_ss_128, gemm90t3_rs_128, gemm90t3_rst_128};
    for (Gemm90TFn f : t128)
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sm90n::TCfg<2, 128>::SMEM));
    for (Gemm90TFn f : t3)
      CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, sm90n::TCfg<3, 128>::SMEM));
    CK(cudaFuncSetAttribute(gemm90t2_ss_256, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            sm90n::TCfg<2, 256>::SMEM));
  }

  std::vector<Case> cases = {
      // the default model 784-256-128-10 at batch 128 (layouts as GpuTrainer calls gemm)
      {"mlp-fwd1", 128, 256, 784, false, false, false, 1},
      {"mlp-fwd2", 128, 128, 256, false, false, false, 1},
      {"mlp-fwd3", 128, 10, 128, false, false, false, 0},
      {"mlp-dW1", 784, 256, 128, true, false, false, 0},
      {"mlp-dW2", 256, 128, 128, true, false, false, 0},
      {"mlp-dW3", 128, 10, 128, true, false, false, 0},
      {"mlp-dX2", 128, 256, 128, false, true, false, 2},
      {"mlp-dX3", 128, 128, 10, false, true, false, 2},
      // the 20M model 784-4096-4096-10 at batch 512
      {"20m-fwd1", 512, 4096, 784, false, false, false, 1},
      {"20m-fwd2", 512, 4096, 4096, false, false, false, 1},
      {"20m-fwd3", 512, 10, 4096, false, false, false, 0},
      {"20m-dW1", 784, 4096, 512, true, false, false, 0},
      {"20m-dW2", 4096, 4096, 512, true, false, false, 0},
      {"20m-dW3", 4096, 10, 512, true, false, false, 0},
      {"20m-dX2", 512, 4096, 4096, false, true, false, 2},
      {"20m-dX3", 512, 4096, 10, false, true, false, 2},
      // square
      {"sq-4096-nn", 4096, 4096, 4096, false, false, false, 0},
      {"sq-4096-nt", 4096, 4096, 4096, false, true, false, 0},
      {"sq-4096-tn", 4096, 4096, 4096, true, false, false, 0},
      {"sq-4096-tt", 4096, 4096, 4096, true, true, false, 0},
      // odd tails, leading dimensions padded to multiples of 4 (what the wgmma path needs)
      {"tail-1", 1, 1, 1, false, false, true, 1},
      {"tail-13-nn", 13, 13, 13, false, false, true, 1},
      {"tail-13-nt", 13, 13, 13, false, true, true, 2},
      {"tail-13-tn", 13, 13, 13, true, false, true, 0},
      {"tail-13-tt", 13, 13, 13, true, true, true, 1},
      {"tail-a-nn", 127, 1021, 784, false, false, true, 1},
      {"tail-a-nt", 127, 1021, 784, false, true, true, 2},
      {"tail-a-tn", 127, 1021, 784, true, false, true, 0},
      {"tail-a-tt", 127, 1021, 784, true, true, true, 1},
      {"tail-b-nn", 1021, 127, 13, false, false, true, 2},
      {"tail-b-nt", 1021, 784, 127, false, true, true, 1},
      {"tail-b-tn", 784, 1021, 127, true, false, true, 2},
      {"tail-b-tt", 1021, 1021, 1021, true, true, true, 0},
      {"tail-c-nn", 1, 4096, 1021, false, false, true, 1},
      {"tail-c-tn", 4096, 1, 1021, true, false, true, 0},
      {"tail-c-nt", 1021, 13, 4096, false, true, true, 2},
      {"tail-10-nn", 512, 10, 4096, false, false, true, 0},
  };
  printf("%-11s %5s %5s %5s %2s | %-24s | %-30s | %-18s | %-18s | %-18s | %s\n", "shape", "m",
         "n", "k", "op", "wmma: err ms TFLOP/s", "wgmma: cfg err ms TFLOP/s", "tma2: BS ms TF/s",
         "tma3: BS ms TF/s", "ss: BS ms TF/s", "wgmma ms / best tma ms");
  int failures = 0;
  for (const Case& c : cases) {
    bool wanted = only.empty();
    for (auto& o : only) wanted |= strncmp(c.name, o.c_str(), o.size()) == 0;
    if (!wanted) continue;
    int m = c.m, n = c.n, k = c.k;
    int aCols = c.ta ? m : k, aRows = c.ta ? k : m;
    int bCols = c.tb ? k : n, bRows = c.tb ? n : k;
    int lda = c.pad ? (aCols + 3) / 4 * 4 : aCols;
    int ldb = c.pad ? (bCols + 3) / 4 * 4 : bCols;
    int ldc = n;
    std::vector<float> A((size_t)aRows * lda), B((size_t)bRows * ldb), bias(n), mask((size_t)m * n);
    for (auto& x : A) x = urand();
    for (auto& x : B) x = urand();
    for (auto& x : bias) x = urand();
    for (auto& x : mask) x = urand() > 0 ? 1.0f : 0.0f;
    float *dA, *dB, *dC, *dBias, *dMask;
    CK(cudaMalloc(&dA, A.size() * 4));
    CK(cudaMalloc(&dB, B.size() * 4));
    CK(cudaMalloc(&dC, (size_t)m * ldc * 4));
    CK(cudaMalloc(&dBias, n * 4));
    CK(cudaMalloc(&dMask, mask.size() * 4));
    CK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dBias, bias.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dMask, mask.data(), mask.size() * 4, cudaMemcpyHostToDevice));
    double gf = 2.0 * m * n * k * 1e-9;
    Plan90 dummy = {};
    Result o = check_and_time(c, 0, dummy, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                              lda, ldb, ldc);
    char oldS[64], newS[96], tms[3][48] = {"-", "-", "-"}, best[48] = "-";
    std::string alts;
    snprintf(oldS, sizeof oldS, "%.1e %8.4f %6.1f", o.err, o.ms, gf / o.ms);
    if (o.worst > 1) { failures++; strcat(oldS, " FAIL"); }
    bool aligned = (lda % 4 == 0) && (ldb % 4 == 0);
    Plan90 p = plan90(c.ta, c.tb, m, n, k);
    if (!aligned) {
      snprintf(newS, sizeof newS, "n/a (ld not a multiple of 4)");
    } else if (!p.ok) {
      snprintf(newS, sizeof newS, "n/a (%s)", p.why);
    } else {
      Result w = check_and_time(c, 1, p, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                                lda, ldb, ldc);
      snprintf(newS, sizeof newS, "%3dx%d %.1e %8.4f %6.1f%s", p.bs, p.splits, w.err, w.ms,
               gf / w.ms, w.worst > 1 ? " FAIL" : "");
      if (w.worst > 1) failures++;
      // the TMA kernels (gemm_sm90_next.cuh) at the same plan: tma2, tma3 and, for NN
      // ss-pre (B^T made once, untimed) and for TN ss2 (A and B transposed, timed)
      float bestMs = 1e30f;
      const char* bestName = "-";
      auto tma = [&](int nwg, int mode, const Plan90& v, char* out, size_t cap) {
        g_tv = {nwg, mode};
        Result y = check_and_time(c, 2, v, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                                  lda, ldb, ldc);
        if (y.worst > 1) failures++;
        snprintf(out, cap, "%3d %8.4f %5.1f%s", tma_bs(nwg, mode, c.ta, c.tb, v.bs), y.ms,
                 gf / y.ms, y.worst > 1 ? " FAIL" : "");
        return y.ms;
      };
      static const char* TNAME[3] = {"tma2", "tma3", "ss"};
      int ldk = (k + 3) / 4 * 4;
      bool nn = !c.ta && !c.tb, tn = c.ta && !c.tb;
      g_preOk = false;
      if (nn && (long long)n * ldk <= TRANS_FLOATS) {
        gemm90_transpose<<<dim3((n + 31) / 32, (k + 31) / 32), dim3(32, 8)>>>(dB, k, n, ldb, g_pre,
                                                                             ldk);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        g_preOk = true;
      }
      bool ss2Ok = tn && (long long)m * ldk <= TRANS_FLOATS;
      for (int q = 0; q < 3; q++) {
        if (q == 2 && !g_preOk && !ss2Ok) continue;
        float ms = tma(q == 1 ? 3 : 2, q < 2 ? 0 : (nn ? 1 : 2), p, tms[q], sizeof tms[0]);
        if (ms < bestMs) { bestMs = ms; bestName = TNAME[q]; }
      }
      snprintf(best, sizeof best, "%s %.2fx", bestName, w.ms / bestMs);
      if (g_clusters) {  // the cluster kernels at the same plan (measured slower, 2026-12-03)
        alts += "\n      clusters";
        for (int cl = 1; cl <= 3; cl++) {
          Plan90 v = p;
          v.cl = cl;
          Result y = check_and_time(c, 1, v, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                                    lda, ldb, ldc);
          char one[96];
          snprintf(one, sizeof one, "  %s %8.4f %5.1f%s", CL_NAME[cl], y.ms, gf / y.ms,
                   y.worst > 1 ? " FAIL" : "");
          if (y.worst > 1) failures++;
          alts += one;
        }
      }
      // large products: the other block widths, no split, the plan's and twice it, for tuning
      // TrainingKernels.hopperShape (checked too): wgmma and tma2 (+ c, r with --clusters)
      if ((long long)m * n * k >= (1LL << 26)) {
        long long tilesK = (k + 31) / 32;
        for (int bs = 128; bs <= 256; bs *= 2) {
          int sps[4] = {1, p.splits, 2 * p.splits, 4 * p.splits};
          for (int si = 0; si < 4; si++) {
            int sp = sps[si];
            bool dup = si == 1 && p.splits == 1;  // = sps[0]
            if (dup || (bs == p.bs && sp == p.splits) || sp > tilesK || sp > 16 ||
                (sp > 1 && (long long)sp * m * n > WORK_FLOATS))
              continue;
            char one[160];
            snprintf(one, sizeof one, "\n      %3dx%-2d", bs, sp);
            alts += one;
            Plan90 v = p;
            v.bs = bs;
            v.splits = sp;
            for (int cl = 0; cl <= (g_clusters ? 2 : 0); cl++) {  // q 2x2: always the slowest
              v.cl = cl;
              Result y = check_and_time(c, 1, v, quick, dA, dB, dC, dBias, dMask, A, B, bias,
                                        mask, lda, ldb, ldc);
              if (y.worst > 1) failures++;
              snprintf(one, sizeof one, "  %s %8.4f %5.1f%s", CL_NAME[cl], y.ms, gf / y.ms,
                       y.worst > 1 ? " FAIL" : "");
              alts += one;
            }
            v.cl = 0;
            if (tma_bs(2, 0, c.ta, c.tb, bs) == bs) {
              char t2[64];
              tma(2, 0, v, t2, sizeof t2);
              alts += "  tma2 ";
              alts += t2 + 4;  // without the width column
            }
            if (g_preOk || ss2Ok) {
              char t2[64];
              tma(2, nn ? 1 : 2, v, t2, sizeof t2);
              alts += "  ss ";
              alts += t2 + 4;
            }
          }
        }
      }
    }
    printf("%-11s %5d %5d %5d %c%c | %-24s | %-30s | %-18s | %-18s | %-18s | %s%s\n", c.name, m, n,
           k, c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', oldS, newS, tms[0], tms[1], tms[2], best,
           alts.c_str());
    fflush(stdout);
    CK(cudaFree(dA)); CK(cudaFree(dB)); CK(cudaFree(dC)); CK(cudaFree(dBias)); CK(cudaFree(dMask));
  }
  printf("err: max |c - ref| / sum|a b| (float64 ref); FAIL: beyond (2^-9 + k 2^-24) sum|a b|; "
         "cfg: BS x splits; tma2 / tma3: gemm90t{2,3}_* (TMA, mbarriers, producer warpgroup, "
         "2 / 3 consumer warpgroups; NT both operands by descriptor, NN / TT A from registers, "
         "128-wide) at the wgmma plan's splits; ss: NN on B^T made once untimed (ss-pre), TN "
         "with A and B transposed in the timing (ss2), then the NT TMA kernel; indented: the "
         "other BS x splits (from 2^26 multiply-adds): wgmma, tma2, ss (+ clusters with "
         "--clusters)\n");
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "ALL OK", failures);
  return failures ? 1 : 0;
}
