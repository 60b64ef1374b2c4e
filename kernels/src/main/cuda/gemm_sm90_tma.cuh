// TF32 wgmma GEMM with TMA loads, an mbarrier pipeline and warp specialisation (sm_90a): the
// kernels TrainingKernels runs on compute capability 9.0 where it can encode tensor maps
// (TensorMaps: cuTensorMapEncodeTiled, which JCuda 12.0.0 does not bind, reached through
// jdk.incubator.foreign), else it keeps the cp.async kernels of gemm_sm90.cuh. gemm_sm90.cu
// builds the 2-consumer-warpgroup, 128-wide kernels into the cubin; the harness
// (kernels/src/test/cuda/gemm_sm90_next.cuh) adds the 256-wide and 3-warpgroup ones.
//
// gemm90t<NWG, BS, SS, OUT_T>: one block computes a BR x BS tile of D = R S^T (BR = 64 NWG) with
// NWG consumer warpgroups (warps 0 .. 4 NWG - 1, each warpgroup 64 rows, one m64nBSk8 wgmma a
// k-step of 8) and one producer warpgroup (warps 4 NWG ..; lane 0 of its first warp issues the
// TMA loads, the rest exit). setmaxnreg (producer down, consumers up) is issued, but the ptxas of CUDA 13.0 allocates every thread within
// the launch bound anyway (65536 / 384 -> 168 registers; a 288-thread block got no more), so the
// 256-wide register-A kernels (128 accumulators + two fragment sets) would spill: only the
// 128-wide ones of those are built. Operands as in gemm_sm90.cuh
// (NT: R = A, S = B; NN: R = B [k][n], S = A, OUT_T; TT: R = A [k][m], S = B; TN: B transposed
// first, then TT):
//   S [s][k] (K-major): one TMA box {32 k, BS s} a stage, 128-byte swizzle (the layout the
//     wgmma descriptor reads: chunk c of row s at c ^ (s & 7), 1024-byte atoms).
//   SS = true (R [r][k], K-major, the NT product): R too as one box {32 k, BR r}, and the wgmma
//     reads both operands through descriptors (no fragment loads at all).
//   SS = false (R [k][r]): R as BR / 32 boxes {32 r, 32 k}, 128-byte swizzled (element (k, r) of
//     box r / 32 at byte 128 k + 16 ((r % 32 / 4) ^ (k % 8)) + 4 (r % 4)); each consumer thread
//     loads its A fragments from there (at most 2-way bank conflicts).
// TMA zero-fills everything outside the matrix (tails in rows, columns and K), and counts the
// whole box in the transaction bytes, so every stage expects STAGE_BYTES.
// Pipeline: STAGES stages, full[s] (count 1: the producer's arrive.expect_tx, completed by the
// TMA bytes) and empty[s] (count 4 NWG: lane 0 of every consumer warp, after the
// wgmma.wait_group that retired the group reading the stage). The producer runs up to STAGES
// tiles ahead. Consumers keep one wgmma group in flight (wait_group 1) and hold the retired
// group's input registers (fragments, descriptors) live until after the wait (the CUDA 13.0
// ptxas caveat of gemm_sm90.cuh). Sums in a fixed order (k ascending within a split, splits finished in order by
// gemm_splitk_finish): deterministic.
// A wait that does not finish within about 2 s traps (a hang becomes a CUDA error, not a stall).
#pragma once
#include <cuda.h>
#include "gemm_sm90.cuh"

namespace sm90n {

constexpr int BK = 32;

template <int NWG, int BS> struct TCfg {
  static constexpr int BR = 64 * NWG;
  static constexpr int THREADS = 128 * NWG + 128;  // + the producer warpgroup
  static constexpr int S_BYTES = BS * BK * 4;
  static constexpr int R_BYTES = BR * BK * 4;
  static constexpr int STAGE_BYTES = S_BYTES + R_BYTES;
  static constexpr int ST0 = (227 * 1024 - 1024 - 256) / STAGE_BYTES;
  static constexpr int STAGES = ST0 > 8 ? 8 : ST0;
  static constexpr int BAR_OFF = STAGES * STAGE_BYTES;          // from the 1024-aligned base
  static constexpr int SMEM = BAR_OFF + 256 + 1024;             // + barriers + alignment slack
  static_assert(STAGES >= 2 && SMEM <= 227 * 1024, "fits one block per multiprocessor");
  static_assert(BS <= 256 && BR <= 256, "TMA box dimensions");
};

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar)
               : "memory");
}
__device__ __forceinline__ bool mbar_try(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}
// wait for the phase of parity `parity` to complete; trap after ~2 s (a pipeline bug)
__device__ __forceinline__ void mbar_wait_t(unsigned bar, unsigned parity) {
  if (mbar_try(bar, parity)) return;
  const unsigned long long t0 = gtime();
  while (!mbar_try(bar, parity)) {
    if (gtime() - t0 > 2000000000ull) __trap();
  }
}
__device__ __forceinline__ void tma2d(unsigned dst, const CUtensorMap* map, int c0, int c1,
                                      unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
template <int N> __device__ __forceinline__ void reg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void reg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
__device__ __forceinline__ void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
}

// D[64 x N] += A (descriptor, K-major) * B (descriptor, K-major), TF32, both 128B-swizzled
template <int N> struct MmaSS;
#define TL_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
    "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
template <> struct MmaSS<128> {
  __device__ __forceinline__ static void run(float (&d)[64], unsigned long long da,
                                             unsigned long long db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, 1, 1, 1;\n"
        : TL_D8(0), TL_D8(8), TL_D8(16), TL_D8(24), TL_D8(32), TL_D8(40), TL_D8(48), TL_D8(56)
        : "l"(da), "l"(db));
  }
};
template <> struct MmaSS<256> {
  __device__ __forceinline__ static void run(float (&d)[128], unsigned long long da,
                                             unsigned long long db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, 1, 1, 1;\n"
        : TL_D8(0), TL_D8(8), TL_D8(16), TL_D8(24), TL_D8(32), TL_D8(40), TL_D8(48), TL_D8(56),
          TL_D8(64), TL_D8(72), TL_D8(80), TL_D8(88), TL_D8(96), TL_D8(104), TL_D8(112),
          TL_D8(120)
        : "l"(da), "l"(db));
  }
};
#undef TL_D8

// the SS group's descriptors pinned before the first wgmma, and held (a real, never-taken use)
// after the wait that retires it
__device__ __forceinline__ void pin_q(unsigned long long (&a)[4], unsigned long long (&b)[4]) {
  asm volatile("" : "+l"(a[0]), "+l"(a[1]), "+l"(a[2]), "+l"(a[3]), "+l"(b[0]), "+l"(b[1]),
               "+l"(b[2]), "+l"(b[3])::"memory");
}
__device__ __forceinline__ void hold_q(const unsigned long long (&a)[4],
                                       const unsigned long long (&b)[4], unsigned never,
                                       unsigned addr) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %8, 0;\n"
      "@p st.shared.v2.b64 [%9], {%0, %1};\n"
      "@p st.shared.v2.b64 [%9+16], {%2, %3};\n"
      "@p st.shared.v2.b64 [%9+32], {%4, %5};\n"
      "@p st.shared.v2.b64 [%9+48], {%6, %7};\n}\n" ::"l"(a[0]),
      "l"(a[1]), "l"(a[2]), "l"(a[3]), "l"(b[0]), "l"(b[1]), "l"(b[2]), "l"(b[3]), "r"(never),
      "r"(addr)
      : "memory");
}

template <int NWG, int BS, bool SS, bool OUT_T>
__device__ __forceinline__ void gemm90t(const CUtensorMap* tmR, const CUtensorMap* tmS,
                                        float* __restrict__ C, int Rdim, int Sdim, int K, int ldc,
                                        const float* __restrict__ bias,
                                        const float* __restrict__ mask, int ldmask, int relu,
                                        float* __restrict__ W, int splits) {
  using G = TCfg<NWG, BS>;
  constexpr int BR = G::BR, ST = G::STAGES, ND = BS / 2;
  static_assert(!(SS && OUT_T), "SS is the NT product");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned smem0 = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
  const unsigned full = smem0 + G::BAR_OFF, empty = full + 8 * ST;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wg = warp >> 2;
  const int r0 = blockIdx.x * BR, s0 = blockIdx.y * BS;
  const int tilesK = (K + BK - 1) / BK;
  const int kt0 = (int)((long long)blockIdx.z * tilesK / splits);
  const int kt1 = (int)((long long)(blockIdx.z + 1) * tilesK / splits);
  const int nt = kt1 - kt0;

  if (tid == 0) {
    prefetch_map(tmR);
    prefetch_map(tmS);
    for (int s = 0; s < ST; s++) {
      sm90::mbar_init(full + 8 * s, 1);
      sm90::mbar_init(empty + 8 * s, 4 * NWG);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == NWG) {  // the producer warpgroup
    reg_dec<NWG == 2 ? 40 : 24>();
    if (warp == 4 * NWG && lane == 0) {
      for (int i = 0; i < nt; i++) {
        const int s = i % ST;
        mbar_wait_t(empty + 8 * s, ((unsigned)(i / ST) & 1u) ^ 1u);  // fresh barrier: passes
        sm90::mbar_expect_arrive(full + 8 * s, G::STAGE_BYTES);
        const int k0 = (kt0 + i) * BK;
        const unsigned st = smem0 + s * G::STAGE_BYTES;
        tma2d(st, tmS, k0, s0, full + 8 * s);
        if constexpr (SS) {
          tma2d(st + G::S_BYTES, tmR, k0, r0, full + 8 * s);
        } else {
#pragma unroll
          for (int j = 0; j < BR / 32; j++)
            tma2d(st + G::S_BYTES + j * 4096, tmR, r0 + 32 * j, k0, full + 8 * s);
        }
      }
    }
    return;
  }

  reg_inc<NWG == 2 ? 232 : 160>();
  const int cw = wg, wi = warp & 3, g = lane >> 2, t = lane & 3;
  const int fr = cw * 64 + wi * 16 + g;  // this thread's first row in the block's R tile
  const unsigned never = splits < 0 ? 1u : 0u;
  float d[ND];
#pragma unroll
  for (int i = 0; i < ND; i++) d[i] = 0.0f;

  if constexpr (SS) {
    unsigned long long qa0[4] = {}, qb0[4] = {}, qa1[4] = {}, qb1[4] = {};
    auto step = [&](int i, unsigned long long (&qa)[4], unsigned long long (&qb)[4],
                    unsigned long long (&pa)[4], unsigned long long (&pb)[4]) {
      const int s = i % ST;
      mbar_wait_t(full + 8 * s, (unsigned)(i / ST) & 1u);
      const unsigned st = smem0 + s * G::STAGE_BYTES;
#pragma unroll
      for (int kk = 0; kk < BK / 8; kk++) {
        qa[kk] = sm90::sw128_desc(st + G::S_BYTES + cw * 8192 + kk * 32);
        qb[kk] = sm90::sw128_desc(st + kk * 32);
      }
      pin_q(qa, qb);
#pragma unroll
      for (int j = 0; j < ND; j++) sm90::keep(d[j]);
      sm90::wg_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; kk++) MmaSS<BS>::run(d, qa[kk], qb[kk]);
      sm90::wg_commit();
#pragma unroll
      for (int j = 0; j < ND; j++) sm90::keep(d[j]);
      sm90::wg_wait<1>();  // tile i - 1's group retired: its stage may be refilled
      hold_q(pa, pb, never, smem0);
      if (i > 0) {
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + 8 * ((i - 1) % ST));
      }
    };
    for (int i = 0; i < nt; i += 2) {
      step(i, qa0, qb0, qa1, qb1);
      if (i + 1 < nt) step(i + 1, qa1, qb1, qa0, qb0);
    }
    sm90::wg_wait<0>();
    hold_q(qa0, qb0, never, smem0);
    hold_q(qa1, qb1, never, smem0);
  } else {
    // fragment offsets (floats) in a stage's R part, k-step 0: a0 (k t, r fr), a1 (t, fr + 8),
    // a2 (t + 4, fr), a3 (t + 4, fr + 8); k-step kk adds 8 kk rows of 32 floats
    int off[4];
#pragma unroll
    for (int v = 0; v < 4; v++) {
      int r = fr + (v & 1) * 8, k = t + (v >> 1) * 4;
      int rr = r & 31;
      off[v] = (r >> 5) * 1024 + k * 32 + ((((rr >> 2) ^ (k & 7)) << 2) | (rr & 3));
    }
    const float* sbase = reinterpret_cast<const float*>(
        smem_raw + (smem0 - (unsigned)__cvta_generic_to_shared(smem_raw)));
    unsigned a0[4][4] = {}, a1[4][4] = {};
    unsigned long long q0[4] = {}, q1[4] = {};
    auto step = [&](int i, unsigned (&a)[4][4], unsigned long long (&q)[4],
                    unsigned (&ap)[4][4], unsigned long long (&qp)[4]) {
      const int s = i % ST;
      mbar_wait_t(full + 8 * s, (unsigned)(i / ST) & 1u);
      const unsigned st = smem0 + s * G::STAGE_BYTES;
      const float* rt = sbase + (s * G::STAGE_BYTES + G::S_BYTES) / 4;
#pragma unroll
      for (int kk = 0; kk < BK / 8; kk++) {
#pragma unroll
        for (int v = 0; v < 4; v++) a[kk][v] = __float_as_uint(rt[off[v] + kk * 256]);
        q[kk] = sm90::sw128_desc(st + kk * 32);
      }
      sm90::pin(a, q);
#pragma unroll
      for (int j = 0; j < ND; j++) sm90::keep(d[j]);
      sm90::wg_fence();
#pragma unroll
      for (int kk = 0; kk < BK / 8; kk++) sm90::Mma<BS>::run(d, a[kk], q[kk]);
      sm90::wg_commit();
#pragma unroll
      for (int j = 0; j < ND; j++) sm90::keep(d[j]);
      sm90::wg_wait<1>();
      sm90::hold(ap, qp, never, smem0);
      if (i > 0) {
        __syncwarp();
        if (lane == 0) mbar_arrive(empty + 8 * ((i - 1) % ST));
      }
    };
    for (int i = 0; i < nt; i += 2) {
      step(i, a0, q0, a1, q1);
      if (i + 1 < nt) step(i + 1, a1, q1, a0, q0);
    }
    sm90::wg_wait<0>();
    sm90::hold(a0, q0, never, smem0);
    sm90::hold(a1, q1, never, smem0);
  }
#pragma unroll
  for (int j = 0; j < ND; j++) sm90::keep(d[j]);

  // epilogue (as gemm90): d[4j + v] is row g (+8 for v >= 2), column 8j + 2t (+1 for odd v) of
  // this warp's 16 x BS slice
  const int M = OUT_T ? Sdim : Rdim, N = OUT_T ? Rdim : Sdim;
  float* out = splits > 1 ? W + (long long)blockIdx.z * M * N : C;
  const int ldo = splits > 1 ? N : ldc;
#pragma unroll
  for (int j = 0; j < BS / 8; j++) {
#pragma unroll
    for (int v = 0; v < 4; v++) {
      int rr = r0 + fr + (v >> 1) * 8, ss = s0 + j * 8 + 2 * t + (v & 1);
      int gi = OUT_T ? ss : rr, gj = OUT_T ? rr : ss;
      if (rr < Rdim && ss < Sdim) {
        float x = d[4 * j + v];
        if (splits == 1) {
          if (bias) x += bias[gj];
          if (relu) x = fmaxf(x, 0.0f);
          if (mask && !(mask[(long long)gi * ldmask + gj] > 0.0f)) x = 0.0f;
        }
        out[(long long)gi * ldo + gj] = x;
      }
    }
  }
}

}  // namespace sm90n

// gemm90t{2,3}_{ss,rs,rst}_{128,256}(tmR, tmS, C, Rdim, Sdim, K, ldc, bias, mask, ldmask, relu,
// W, splits): NWG = 2 or 3 consumer warpgroups; ss: NT (R = A [m][k], S = B [n][k]), rs: TT
// (R = A [k][m], S = B [n][k]), rst: NN (R = B [k][n], S = A [m][k], C written transposed).
// tmR / tmS: 128B-swizzled FP32 tensor maps, box {32, BR} (ss R), {32, 32} (rs R), {32, BS} (S).
// Grid ceil(Rdim / BR) x ceil(Sdim / BS) x splits, TCfg::THREADS threads, TCfg::SMEM bytes.
#define TREELINE_GEMM90T(NAME, NWG, BS, SS, OT)                                                  \
  extern "C" __global__ void __launch_bounds__(128 * NWG + 128, 1)                              \
  NAME(const __grid_constant__ CUtensorMap tmR, const __grid_constant__ CUtensorMap tmS,        \
       float* __restrict__ C, int Rdim, int Sdim, int K, int ldc,                               \
       const float* __restrict__ bias, const float* __restrict__ mask, int ldmask, int relu,    \
       float* __restrict__ W, int splits) {                                                     \
    sm90n::gemm90t<NWG, BS, SS, OT>(&tmR, &tmS, C, Rdim, Sdim, K, ldc, bias, mask, ldmask, relu, \
                                    W, splits);                                                 \
  }
