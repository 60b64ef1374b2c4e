// Check-and-time harness of the GEMM kernels (no JVM, no Maven: the GPU machine has neither).
// For each shape and layout it runs the wmma kernels of training.cuh (launched as
// TrainingKernels.gemm launches them: shape() picks 128 x 128 tiles or 64 x 64 tiles with
// split-K) and the Hopper wgmma kernels of gemm_sm90.cuh (launched as TrainingKernels.gemm90
// launches them, forced on even where TrainingKernels would not pick them), compares both with a
// float64 host product (every element of the small ones, 4096 sampled elements, edges included,
// of the large ones), and times both (median of 5 rounds of back-to-back launches between CUDA
// events), beside the cluster kernels gemm90{c,r,q}_* at the same plan and, for the large
// products, other block widths and splits. Build: build-gemm-check.sh (static CUDA runtime, sm_90a). Usage:
//   gemm_check [--quick] [--old-plan] [NAME...]   (--quick: correctness only, one timed launch;
//     --old-plan: without hopperShape's 256-wide split; NAME: only the shapes whose name starts
//     with one of these)
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
static bool g_wideSplit = true;  // --old-plan: the plan before the 256-wide split (false)
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

static Result check_and_time(const Case& c, bool newPath, const Plan90& p, bool quick,
                             const float* dA, const float* dB, float* dC, const float* dBias,
                             const float* dMask, const std::vector<float>& A,
                             const std::vector<float>& B, const std::vector<float>& bias,
                             const std::vector<float>& mask, int lda, int ldb, int ldc) {
  int m = c.m, n = c.n, k = c.k;
  const float* bb = c.epi ? dBias : nullptr;
  const float* mm = c.epi == 2 ? dMask : nullptr;
  bool relu = c.epi == 1;
  static char where[96];
  snprintf(where, sizeof where, "%s %s BS %d splits %d", c.name,
           newPath ? CL_NAME[p.cl] : "wmma", p.bs, p.splits);
  g_current = where;
  auto run = [&]() {
    if (newPath)
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
  printf("%-11s %5s %5s %5s %2s | %-24s | %-30s | %-14s | %-14s | %-14s | %s\n", "shape", "m",
         "n", "k", "op", "wmma: err ms TFLOP/s", "wgmma: cfg err ms TFLOP/s", "c 2x1: ms TF/s",
         "r 1x2: ms TF/s", "q 2x2: ms TF/s", "best cluster / wgmma");
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
    Result o = check_and_time(c, false, dummy, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                              lda, ldb, ldc);
    char oldS[64], newS[96], cls[3][48] = {"-", "-", "-"}, best[48] = "-";
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
      Result w = check_and_time(c, true, p, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                                lda, ldb, ldc);
      snprintf(newS, sizeof newS, "%3dx%d %.1e %8.4f %6.1f%s", p.bs, p.splits, w.err, w.ms,
               gf / w.ms, w.worst > 1 ? " FAIL" : "");
      if (w.worst > 1) failures++;
      // the cluster kernels at the same plan, checked (in the exit status) and timed
      float bestMs = 1e30f;
      int bestCl = 0;
      for (int cl = 1; cl <= 3; cl++) {
        Plan90 v = p;
        v.cl = cl;
        Result y = check_and_time(c, true, v, quick, dA, dB, dC, dBias, dMask, A, B, bias, mask,
                                  lda, ldb, ldc);
        snprintf(cls[cl - 1], sizeof cls[0], "%8.4f %5.1f%s", y.ms, gf / y.ms,
                 y.worst > 1 ? " FAIL" : "");
        if (y.worst > 1) failures++;
        if (y.ms < bestMs) { bestMs = y.ms; bestCl = cl; }
      }
      snprintf(best, sizeof best, "%s %.2fx", CL_NAME[bestCl], w.ms / bestMs);
      // large products: the other block widths, no split, the plan's and twice it, for tuning
      // TrainingKernels.hopperShape (checked too)
      if ((long long)m * n * k >= (1LL << 26)) {
        long long tilesK = (k + 31) / 32;
        for (int bs = 128; bs <= 256; bs *= 2) {
          int sps[3] = {1, p.splits, 2 * p.splits};
          for (int si = 0; si < 3; si++) {
            int sp = sps[si];
            bool dup = si == 1 && p.splits == 1;  // = sps[0]
            if (dup || (bs == p.bs && sp == p.splits) || sp > tilesK ||
                (sp > 1 && (long long)sp * m * n > WORK_FLOATS))
              continue;
            char one[160];
            snprintf(one, sizeof one, "\n      %3dx%-2d", bs, sp);
            alts += one;
            for (int cl = 0; cl <= 2; cl++) {  // q 2x2: the slowest in every run so far
              Plan90 v = p;
              v.bs = bs;
              v.splits = sp;
              v.cl = cl;
              Result y = check_and_time(c, true, v, quick, dA, dB, dC, dBias, dMask, A, B, bias,
                                        mask, lda, ldb, ldc);
              if (y.worst > 1) failures++;
              snprintf(one, sizeof one, "  %s %8.4f %5.1f%s", CL_NAME[cl], y.ms, gf / y.ms,
                       y.worst > 1 ? " FAIL" : "");
              alts += one;
            }
          }
        }
      }
    }
    printf("%-11s %5d %5d %5d %c%c | %-24s | %-30s | %-14s | %-14s | %-14s | %s%s\n", c.name, m, n,
           k, c.ta ? 'T' : 'N', c.tb ? 'T' : 'N', oldS, newS, cls[0], cls[1], cls[2], best,
           alts.c_str());
    fflush(stdout);
    CK(cudaFree(dA)); CK(cudaFree(dB)); CK(cudaFree(dC)); CK(cudaFree(dBias)); CK(cudaFree(dMask));
  }
  printf("err: max |c - ref| / sum|a b| (float64 ref); FAIL: beyond (2^-9 + k 2^-24) sum|a b|; "
         "cfg: BS x splits; c, r, q: the cluster kernels gemm90{c,r,q}_* at the wgmma plan; "
         "indented: the other BS x splits (from 2^26 multiply-adds), plain, c and r\n");
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "ALL OK", failures);
  return failures ? 1 : 0;
}
