// TF32 GEMM on Hopper's warpgroup MMA (wgmma.mma_async, sm_90a only), built into its own cubin
// (gemm_sm90.cu -> treeline_sm90a.cubin) that TrainingKernels loads on compute capability 9.0
// and uses for the large products; every other device and shape keeps the wmma kernels of
// training.cuh.
//
// One block computes a BR x BS tile of D = R S^T over K (BR = 128: two warpgroups of 64 rows;
// BS = 128 or 256: the N of one m64nBSk8 instruction), where R is the operand that goes to
// registers and S the one wgmma reads from shared memory through a matrix descriptor. TF32 wgmma
// reads only K-major shared tiles, so S must be stored [s][k] (k contiguous); R may be either
// [r][k] or [k][r], because each thread loads its own fragment from shared memory. The three
// layouts of C = op(A) op(B) that TrainingKernels sends here map onto that as
//   NT: R = A [m][k], S = B [n][k], D = C
//   NN: R = B [k][n], S = A [m][k], D = C^T (written transposed)
//   TT: R = A [k][m], S = B [n][k], D = C
// and TN transposes B into a workspace first (gemm90_transpose), then runs as TT.
//
// Shared tiles of S use the 128-byte swizzle: a tile row (one s) is BK = 32 floats = 128 bytes,
// its 16-byte chunk c sits at chunk c ^ (s & 7), eight rows form a 1024-byte atom (the stage is
// 1024-byte aligned), the descriptor's stride byte offset is 1024 and the k-step of 8 floats
// advances its start address by 32 bytes. R tiles are padded so the fragment loads hit 32
// distinct banks. Copies are 16-byte cp.async with zero fill (rows, columns and K past the
// matrix read zeros), so the caller guarantees 16-byte aligned bases and leading dimensions that
// are multiples of 4 floats. Cfg<BS>::STAGES stages: STAGES - 1 tiles of loads in flight ahead
// of the one being multiplied (TREELINE_GEMM90_OVERLAP: STAGES - 2, and one wgmma group in
// flight behind it). Every register a wgmma reads (A fragments, descriptors) is kept live by a real use after
// the wgmma.wait_group that retires it (hold): the ptxas of CUDA 13.0 may otherwise hand an
// in-flight wgmma's input registers to other values (a ptxas bug that NVIDIA's CUDA 13.3 notes
// say is fixed). Products read the f32 bits as TF32 (the
// hardware drops the low 13 mantissa bits, as cuBLAS's TF32 mode does), sums in f32, in a fixed
// order: the result does not depend on the launch.
#pragma once

namespace sm90 {

constexpr int BR = 128, BK = 32, THREADS = 256;
constexpr int LD_RK = BK + 4;   // R stored [r][k]: 36 floats a row
constexpr int LD_KR = BR + 8;   // R stored [k][r]: 136 floats a row
constexpr int R_BYTES = 18432;  // max(BR * 36, BK * 136) * 4 rounded up to 1024

// Stages: as many as fit 227 KiB (BS = 256: 4 of 50 KiB, BS = 128: 6 of 34 KiB), so STAGES - 1
// tiles of loads are in flight while one is multiplied (STAGES - 2 and one more still being read
// with TREELINE_GEMM90_OVERLAP).
template <int BS> struct Cfg {
  static constexpr int S_BYTES = BS * BK * 4;
  static constexpr int STAGE_BYTES = S_BYTES + R_BYTES;
  static constexpr int STAGES = BS == 256 ? 4 : 6;
  static constexpr int SMEM = STAGES * STAGE_BYTES + 1024;  // + alignment slack
  static_assert(S_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "1024-byte aligned stages");
  static_assert(SMEM <= 227 * 1024, "fits one block per multiprocessor");
};

__device__ __forceinline__ void cp16(unsigned dst, const float* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void keep(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// Fragments and descriptors pinned in registers here (the compiler must have computed them all
// before this point, and may not sink one past it to between two wgmmas).
__device__ __forceinline__ void pin(unsigned (&a)[4][4], unsigned long long (&q)[4]) {
#pragma unroll
  for (int i = 0; i < 4; i++)
    asm volatile("" : "+r"(a[i][0]), "+r"(a[i][1]), "+r"(a[i][2]), "+r"(a[i][3]), "+l"(q[i])::"memory");
}
// A real use of a retired group's input registers (stores under a predicate that is false at
// run time but not provably so): ptxas keeps them allocated, untouched, up to here.
__device__ __forceinline__ void hold(const unsigned (&a)[4][4], const unsigned long long (&q)[4],
                                     unsigned never, unsigned addr) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %20, 0;\n"
      "@p st.shared.v4.b32 [%21], {%0, %1, %2, %3};\n"
      "@p st.shared.v4.b32 [%21+16], {%4, %5, %6, %7};\n"
      "@p st.shared.v4.b32 [%21+32], {%8, %9, %10, %11};\n"
      "@p st.shared.v4.b32 [%21+48], {%12, %13, %14, %15};\n"
      "@p st.shared.v2.b64 [%21+64], {%16, %17};\n"
      "@p st.shared.v2.b64 [%21+80], {%18, %19};\n}\n" ::"r"(a[0][0]),
      "r"(a[0][1]), "r"(a[0][2]), "r"(a[0][3]), "r"(a[1][0]), "r"(a[1][1]), "r"(a[1][2]),
      "r"(a[1][3]), "r"(a[2][0]), "r"(a[2][1]), "r"(a[2][2]), "r"(a[2][3]), "r"(a[3][0]),
      "r"(a[3][1]), "r"(a[3][2]), "r"(a[3][3]), "l"(q[0]), "l"(q[1]), "l"(q[2]), "l"(q[3]),
      "r"(never), "r"(addr)
      : "memory");
}

// Descriptor of a K-major, 128-byte-swizzled tile at shared address addr: start address >> 4
// (bits 0-13), leading byte offset 16 >> 4 (bits 16-29; unused by swizzled K-major tiles),
// stride byte offset 1024 >> 4 (bits 32-45), base offset 0, layout type 1 = 128B swizzle
// (bits 62-63).
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// D[64 x 128] += A[64 x 8] (registers) * B[8 x 128] (K-major, descriptor), TF32 in, f32 out
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long desc) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

// D[64 x 256] += A[64 x 8] (registers) * B[8 x 256] (K-major, descriptor), TF32 in, f32 out
__device__ __forceinline__ void wgmma_rs_n256(float (&d)[128], const unsigned (&a)[4], unsigned long long desc) {
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
      "}, {%128, %129, %130, %131}, %132, 1, 1, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));
}

template <int BS> struct Mma;
template <> struct Mma<128> {
  __device__ __forceinline__ static void run(float (&d)[64], const unsigned (&a)[4],
                                             unsigned long long desc) { wgmma_rs_n128(d, a, desc); }
};
template <> struct Mma<256> {
  __device__ __forceinline__ static void run(float (&d)[128], const unsigned (&a)[4],
                                             unsigned long long desc) { wgmma_rs_n256(d, a, desc); }
};

// Issues the copies of k-tile kt (k0 = kt * BK) into one stage: S (BS rows of 8 chunks, chunk c
// of row s to chunk c ^ (s & 7)) and R (R_KMAJ: BR rows of 8 chunks, else BK rows of BR / 4).
// A chunk past the matrix copies 0 bytes (all zeros), one across its edge only what is inside.
template <int BS, bool R_KMAJ>
__device__ __forceinline__ void load_tile(unsigned sS, unsigned sR, const float* __restrict__ R,
                                          const float* __restrict__ S, int Rdim, int Sdim, int K,
                                          int ldr, int lds, int r0, int s0, int k0) {
  const int tid = threadIdx.x;
  static_assert((BS * 8) % THREADS == 0 && (BR * 8) % THREADS == 0 &&
                (BK * (BR / 4)) % THREADS == 0, "whole copy rounds");
#pragma unroll
  for (int q = 0; q < BS * 8 / THREADS; q++) {
    int e = tid + q * THREADS;
    int s = e >> 3, c = e & 7;
    int gs = s0 + s, gk = k0 + c * 4;
    int bytes = gs < Sdim ? 4 * min(4, max(0, K - gk)) : 0;
    const float* src = bytes ? S + (long long)gs * lds + gk : S;
    cp16(sS + s * 128 + ((c ^ (s & 7)) << 4), src, bytes);
  }
  if constexpr (R_KMAJ) {
#pragma unroll
    for (int q = 0; q < BR * 8 / THREADS; q++) {
      int e = tid + q * THREADS;
      int r = e >> 3, c = e & 7;
      int gr = r0 + r, gk = k0 + c * 4;
      int bytes = gr < Rdim ? 4 * min(4, max(0, K - gk)) : 0;
      const float* src = bytes ? R + (long long)gr * ldr + gk : R;
      cp16(sR + (r * LD_RK + c * 4) * 4, src, bytes);
    }
  } else {
#pragma unroll
    for (int q = 0; q < BK * (BR / 4) / THREADS; q++) {
      int e = tid + q * THREADS;
      int k = e / (BR / 4), c = e % (BR / 4);
      int gk = k0 + k, gr = r0 + c * 4;
      int bytes = gk < K ? 4 * min(4, max(0, Rdim - gr)) : 0;
      const float* src = bytes ? R + (long long)gk * ldr + gr : R;
      cp16(sR + (k * LD_KR + c * 4) * 4, src, bytes);
    }
  }
}

// D[r][s] = sum_k R(r, k) S(s, k) for this block's tile and its share of the K range (blockIdx.z
// of splits), then: splits == 1: C[i][j] (+ bias[j]) (ReLU) (x [mask[i][j] > 0]) with (i, j) =
// (r, s), or (s, r) when OUT_T; splits > 1: the unfinished sum to W[z][i][j] (M x N, for
// gemm_splitk_finish). M x N is the shape of C.
template <int BS, bool R_KMAJ, bool OUT_T, bool OVERLAP>
__device__ __forceinline__ void gemm90(const float* __restrict__ R, const float* __restrict__ S,
                                       float* __restrict__ C, int Rdim, int Sdim, int K, int ldr,
                                       int lds, int ldc, const float* __restrict__ bias,
                                       const float* __restrict__ mask, int ldmask, int relu,
                                       float* __restrict__ W, int splits) {
  using G = Cfg<BS>;
  constexpr int ND = BS / 2;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned smem0 = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wg = warp >> 2, wi = warp & 3, g = lane >> 2, t = lane & 3;
  const int r0 = blockIdx.x * BR, s0 = blockIdx.y * BS;
  const int tilesK = (K + BK - 1) / BK;
  const int kt0 = (int)((long long)blockIdx.z * tilesK / splits);
  const int kt1 = (int)((long long)(blockIdx.z + 1) * tilesK / splits);
  const int nt = kt1 - kt0;

  float d[ND];
#pragma unroll
  for (int i = 0; i < ND; i++) d[i] = 0.0f;

  // tiles of loads in flight ahead of the one multiplied: the stage of tile i - 1 is free at
  // tile i without OVERLAP (its group retired), only that of tile i - 2 with it
  constexpr int LEAD = OVERLAP ? G::STAGES - 2 : G::STAGES - 1;
  // prologue: tiles 0 .. LEAD - 1 of this split in flight
#pragma unroll
  for (int p = 0; p < LEAD; p++) {
    if (p < nt) {
      unsigned st = smem0 + p * G::STAGE_BYTES;
      load_tile<BS, R_KMAJ>(st, st + G::S_BYTES, R, S, Rdim, Sdim, K, ldr, lds, r0, s0,
                            (kt0 + p) * BK);
    }
    cp_commit();
  }
  // this thread's fragment rows in the R tile (the A operand: a0 (g, t), a1 (g + 8, t),
  // a2 (g, t + 4), a3 (g + 8, t + 4) of its warp's 16 rows)
  const int fr = wg * 64 + wi * 16 + g;
  // never true at run time (splits >= 1), unknown to the compiler: hold()'s stores never run
  const unsigned never = splits < 0 ? 1u : 0u;
  // One k-tile: wait for its copies, refill the stage of tile i + LEAD - STAGES (retired), load
  // this thread's A fragments, issue the four wgmmas as one group. OVERLAP: retire only the
  // previous group (wait_group 1), so this one runs under the next tile's barrier, refill and
  // fragment loads; else retire this one (wait_group 0). Either way the fragments and
  // descriptors of every retired group get a real use (hold) only after the wait that retired
  // it: else ptxas may give a wgmma's input registers to other values (the refill's addresses,
  // the next fragments) while the asynchronous wgmma has not read them yet (the first H200 run:
  // right only where no refill was issued while a group was in flight).
  auto step = [&](int i, unsigned (&a)[BK / 8][4], unsigned long long (&dsc)[BK / 8],
                  unsigned (&aprev)[BK / 8][4], unsigned long long (&dprev)[BK / 8]) {
    cp_wait<LEAD - 1>();  // tile i has landed (this thread's copies; group g holds tile g)
    fence_proxy_async();  // and is visible to the async proxy wgmma reads through
    __syncthreads();      // everyone's copies; every warpgroup is done with tile i + LEAD - STAGES
    if (i + LEAD < nt) {
      unsigned st = smem0 + ((i + LEAD) % G::STAGES) * G::STAGE_BYTES;
      load_tile<BS, R_KMAJ>(st, st + G::S_BYTES, R, S, Rdim, Sdim, K, ldr, lds, r0, s0,
                            (kt0 + i + LEAD) * BK);
    }
    cp_commit();
    const unsigned st = smem0 + (i % G::STAGES) * G::STAGE_BYTES;
    const float* rt = reinterpret_cast<const float*>(
        smem_raw + (st + G::S_BYTES - (unsigned)__cvta_generic_to_shared(smem_raw)));
#pragma unroll
    for (int kk = 0; kk < BK / 8; kk++) {
      int k = kk * 8 + t;
      if constexpr (R_KMAJ) {
        a[kk][0] = __float_as_uint(rt[fr * LD_RK + k]);
        a[kk][1] = __float_as_uint(rt[(fr + 8) * LD_RK + k]);
        a[kk][2] = __float_as_uint(rt[fr * LD_RK + k + 4]);
        a[kk][3] = __float_as_uint(rt[(fr + 8) * LD_RK + k + 4]);
      } else {
        a[kk][0] = __float_as_uint(rt[k * LD_KR + fr]);
        a[kk][1] = __float_as_uint(rt[k * LD_KR + fr + 8]);
        a[kk][2] = __float_as_uint(rt[(k + 4) * LD_KR + fr]);
        a[kk][3] = __float_as_uint(rt[(k + 4) * LD_KR + fr + 8]);
      }
      dsc[kk] = sw128_desc(st + kk * 32);
    }
    pin(a, dsc);  // all fragments and descriptors in registers before the first wgmma
#pragma unroll
    for (int j = 0; j < ND; j++) keep(d[j]);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 8; kk++) Mma<BS>::run(d, a[kk], dsc[kk]);
    wg_commit();
#pragma unroll
    for (int j = 0; j < ND; j++) keep(d[j]);
    if constexpr (OVERLAP) {
      wg_wait<1>();  // the group of tile i - 1 is done: its stage may be refilled after the barrier
      hold(aprev, dprev, never, smem0);
    } else {
      wg_wait<0>();
      hold(a, dsc, never, smem0);
    }
  };
  unsigned a0[BK / 8][4] = {}, a1[BK / 8][4] = {};
  unsigned long long q0[BK / 8] = {}, q1[BK / 8] = {};
  for (int i = 0; i < nt; i += 2) {  // two register sets, so tile i's outlive tile i + 1's wait
    step(i, a0, q0, a1, q1);
    if (i + 1 < nt) step(i + 1, a1, q1, a0, q0);
  }
  wg_wait<0>();
  hold(a0, q0, never, smem0);
  hold(a1, q1, never, smem0);
#pragma unroll
  for (int j = 0; j < ND; j++) keep(d[j]);
  cp_wait<0>();

  // epilogue straight from the accumulators: d[4j + v] is row g (+8 for v >= 2), column
  // 8j + 2t (+1 for odd v) of this warp's 16 x BS slice
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


// ---- thread-block clusters: CX x CY blocks share operand tiles (halving their L2 reads) ----
//
// gemm90c<BS, R_KMAJ, OUT_T, CX, CY>: the OVERLAP pipeline of gemm90 in clusters of CX x CY
// blocks (1 or 2 each). The blocks of a cluster row (same blockIdx.y, so the same s0) need the
// same S tile: with CX = 2 each copies half of it (rows [cx BS / 2, (cx + 1) BS / 2) of the
// tile) from global memory into its own stage and then pushes that byte range (already
// swizzled, contiguous) into the peer's stage at the same offset with one
// cp.async.bulk.shared::cluster (DSMEM), completing on the peer's mbarrier of that stage. The
// same with CY = 2 for R (the blocks of a cluster column share r0): half the k rows (R [k][r])
// or half the r rows (R [r][k]) of the padded tile. A tile's own part is waited for one step
// ahead (cp.async.wait_group), pushed, and the peer's part waited for on the mbarrier when the
// tile is multiplied, so a push has one k-tile of time. Cluster barrier, split: step i ends by
// waiting for every block's arrival at the end of step i - 1, then arriving itself, so a block
// one step ahead does not stall, and at step i + 1 (past __syncthreads) every block of the
// cluster has finished step i - 1: retired the wgmma groups of tiles <= i - 2 and waited for the
// pushes of tiles <= i - 1. So its push of tile i + 2 into a peer's stage (last held tile
// i + 2 - STAGES, retired at step i + 3 - STAGES <= i - 1: STAGES >= 4) and its refill of the
// stage of tile i - 1 (pushed out and in, both waited for at step i - 1) are safe. The
// grid is padded to multiples of CX, CY: a block past the matrix loads zeros (zero fill) and
// stores nothing (the epilogue's bounds).
// Measured (H200, gemm_check, 2026-12-03 17:34 UTC, docs/BENCHMARKS.md): correct at all 36
// shapes, but 0.79-0.94x of gemm90 at the large ones (4096^3 NN: r 1x2 0.656 ms against 0.619),
// so only the harness builds them (TREELINE_GEMM90_CLUSTER_VARIANTS).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned mapa(unsigned addr, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_arrive(unsigned bar, unsigned bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n.reg .pred p;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// bytes (a multiple of 16) from this block's shared src to the peer's shared dst (both
// shared::cluster addresses of the peer from mapa for dst and bar), complete_tx on bar
__device__ __forceinline__ void push(unsigned dst, unsigned src, unsigned bytes, unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
      "r"(src), "r"(bytes), "r"(bar)
      : "memory");
}

template <int BS, bool R_KMAJ> struct Halves {
  static constexpr int S_HALF = BS / 2 * 128;                            // BS / 2 rows of 128 B
  static constexpr int R_HALF = R_KMAJ ? BR / 2 * LD_RK * 4 : BK / 2 * LD_KR * 4;
  static_assert(S_HALF % 16 == 0 && R_HALF % 16 == 0, "bulk copies of 16-byte multiples");
};

// load_tile's copies, restricted to this block's part: S rows [sh * BS / 2, ..) when SPLIT_S,
// R rows (k rows [k][r] or r rows [r][k]) [rh * half, ..) when SPLIT_R
template <int BS, bool R_KMAJ, bool SPLIT_S, bool SPLIT_R>
__device__ __forceinline__ void load_part(unsigned sS, unsigned sR, const float* __restrict__ R,
                                          const float* __restrict__ S, int Rdim, int Sdim, int K,
                                          int ldr, int lds, int r0, int s0, int k0, int sh,
                                          int rh) {
  const int tid = threadIdx.x;
  constexpr int SCH = BS * 8 / (SPLIT_S ? 2 : 1);  // 16-byte chunks of S this block copies
  const int sBase = SPLIT_S ? sh * (BS / 2) : 0;
  static_assert(SCH % THREADS == 0, "whole copy rounds");
#pragma unroll
  for (int q = 0; q < SCH / THREADS; q++) {
    int e = tid + q * THREADS;
    int s = sBase + (e >> 3), c = e & 7;
    int gs = s0 + s, gk = k0 + c * 4;
    int bytes = gs < Sdim ? 4 * min(4, max(0, K - gk)) : 0;
    const float* src = bytes ? S + (long long)gs * lds + gk : S;
    cp16(sS + s * 128 + ((c ^ (s & 7)) << 4), src, bytes);
  }
  if constexpr (R_KMAJ) {
    constexpr int RCH = BR * 8 / (SPLIT_R ? 2 : 1);
    const int rBase = SPLIT_R ? rh * (BR / 2) : 0;
    static_assert(RCH % THREADS == 0, "whole copy rounds");
#pragma unroll
    for (int q = 0; q < RCH / THREADS; q++) {
      int e = tid + q * THREADS;
      int r = rBase + (e >> 3), c = e & 7;
      int gr = r0 + r, gk = k0 + c * 4;
      int bytes = gr < Rdim ? 4 * min(4, max(0, K - gk)) : 0;
      const float* src = bytes ? R + (long long)gr * ldr + gk : R;
      cp16(sR + (r * LD_RK + c * 4) * 4, src, bytes);
    }
  } else {
    constexpr int RCH = BK * (BR / 4) / (SPLIT_R ? 2 : 1);
    const int kBase = SPLIT_R ? rh * (BK / 2) : 0;
    static_assert(RCH % THREADS == 0, "whole copy rounds");
#pragma unroll
    for (int q = 0; q < RCH / THREADS; q++) {
      int e = tid + q * THREADS;
      int k = kBase + e / (BR / 4), c = e % (BR / 4);
      int gk = k0 + k, gr = r0 + c * 4;
      int bytes = gk < K ? 4 * min(4, max(0, Rdim - gr)) : 0;
      const float* src = bytes ? R + (long long)gk * ldr + gr : R;
      cp16(sR + (k * LD_KR + c * 4) * 4, src, bytes);
    }
  }
}

// dynamic shared memory of gemm90c: gemm90's plus one 8-byte mbarrier a stage
template <int BS> constexpr int smem_cluster() { return Cfg<BS>::SMEM + 128; }

template <int BS, bool R_KMAJ, bool OUT_T, int CX, int CY>
__device__ __forceinline__ void gemm90c(const float* __restrict__ R, const float* __restrict__ S,
                                        float* __restrict__ C, int Rdim, int Sdim, int K, int ldr,
                                        int lds, int ldc, const float* __restrict__ bias,
                                        const float* __restrict__ mask, int ldmask, int relu,
                                        float* __restrict__ W, int splits) {
  using G = Cfg<BS>;
  using H = Halves<BS, R_KMAJ>;
  constexpr bool SPLIT_S = CX == 2, SPLIT_R = CY == 2;
  static_assert((CX == 1 || CX == 2) && (CY == 1 || CY == 2) && CX * CY > 1, "2 or 4 blocks");
  static_assert(G::SMEM + 128 <= 227 * 1024, "barriers fit");
  constexpr int ND = BS / 2;
  constexpr int LEAD = G::STAGES - 2;  // the OVERLAP pipeline
  static_assert(LEAD >= 2 && G::STAGES >= 4, "own parts waited for one tile ahead");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const unsigned smem0 = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u;
  const unsigned bars = smem0 + G::STAGES * G::STAGE_BYTES;  // STAGES mbarriers
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wg = warp >> 2, wi = warp & 3, g = lane >> 2, t = lane & 3;
  const int r0 = blockIdx.x * BR, s0 = blockIdx.y * BS;
  // rank in the cluster: x fastest; the S peer differs in x (same s0), the R peer in y (same r0)
  const unsigned rank = cluster_rank();
  const int cx = CX == 2 ? (int)(rank & 1) : 0;
  const int cy = CY == 2 ? (int)(rank / CX) & 1 : 0;
  const unsigned sPeer = rank ^ 1u, rPeer = rank ^ (unsigned)CX;
  const int tilesK = (K + BK - 1) / BK;
  const int kt0 = (int)((long long)blockIdx.z * tilesK / splits);
  const int kt1 = (int)((long long)(blockIdx.z + 1) * tilesK / splits);
  const int nt = kt1 - kt0;
  constexpr unsigned PEER_BYTES = (SPLIT_S ? H::S_HALF : 0) + (SPLIT_R ? H::R_HALF : 0);

  if (tid == 0) {
    for (int s = 0; s < G::STAGES; s++) mbar_init(bars + 8 * s, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }

  float d[ND];
#pragma unroll
  for (int i = 0; i < ND; i++) d[i] = 0.0f;

#pragma unroll
  for (int p = 0; p < LEAD; p++) {
    if (p < nt) {
      unsigned st = smem0 + p * G::STAGE_BYTES;
      load_part<BS, R_KMAJ, SPLIT_S, SPLIT_R>(st, st + G::S_BYTES, R, S, Rdim, Sdim, K, ldr, lds,
                                              r0, s0, (kt0 + p) * BK, cx, cy);
    }
    cp_commit();
  }
  // this block's part of tile j (landed, fenced, barrier passed) to the peers' stage of tile j;
  // expects the peers' parts of tile j on this block's barrier of that stage
  auto share = [&](int j) {
    if (tid == 0 && j < nt) {
      const unsigned st = smem0 + (j % G::STAGES) * G::STAGE_BYTES;
      const unsigned bar = bars + 8 * (j % G::STAGES);
      mbar_expect_arrive(bar, PEER_BYTES);
      if constexpr (SPLIT_S) {
        unsigned src = st + cx * H::S_HALF;
        push(mapa(src, sPeer), src, H::S_HALF, mapa(bar, sPeer));
      }
      if constexpr (SPLIT_R) {
        unsigned src = st + G::S_BYTES + cy * H::R_HALF;
        push(mapa(src, rPeer), src, H::R_HALF, mapa(bar, rPeer));
      }
    }
  };
  cp_wait<LEAD - 1>();  // tile 0's own part
  fence_proxy_async();
  cluster_sync();       // every block: barriers initialised, own part of tile 0 in place
  share(0);
  cluster_arrive();     // "step -1 done" (each step ends waiting for the previous step's arrival)

  const int fr = wg * 64 + wi * 16 + g;
  const unsigned never = splits < 0 ? 1u : 0u;
  auto step = [&](int i, unsigned (&a)[BK / 8][4], unsigned long long (&dsc)[BK / 8],
                  unsigned (&aprev)[BK / 8][4], unsigned long long (&dprev)[BK / 8]) {
    cp_wait<LEAD - 2>();  // own part of tile i + 1 has landed (this thread's copies)
    fence_proxy_async();  // visible to the async proxy (the bulk copy, wgmma)
    __syncthreads();      // everyone's copies; and, from step i - 1's end, every peer is past step i - 2
    share(i + 1);
    if (i + LEAD < nt) {
      unsigned st = smem0 + ((i + LEAD) % G::STAGES) * G::STAGE_BYTES;
      load_part<BS, R_KMAJ, SPLIT_S, SPLIT_R>(st, st + G::S_BYTES, R, S, Rdim, Sdim, K, ldr, lds,
                                              r0, s0, (kt0 + i + LEAD) * BK, cx, cy);
    }
    cp_commit();
    mbar_wait(bars + 8 * (i % G::STAGES), (unsigned)(i / G::STAGES) & 1u);  // the peers' parts
    const unsigned st = smem0 + (i % G::STAGES) * G::STAGE_BYTES;
    const float* rt = reinterpret_cast<const float*>(
        smem_raw + (st + G::S_BYTES - (unsigned)__cvta_generic_to_shared(smem_raw)));
#pragma unroll
    for (int kk = 0; kk < BK / 8; kk++) {
      int k = kk * 8 + t;
      if constexpr (R_KMAJ) {
        a[kk][0] = __float_as_uint(rt[fr * LD_RK + k]);
        a[kk][1] = __float_as_uint(rt[(fr + 8) * LD_RK + k]);
        a[kk][2] = __float_as_uint(rt[fr * LD_RK + k + 4]);
        a[kk][3] = __float_as_uint(rt[(fr + 8) * LD_RK + k + 4]);
      } else {
        a[kk][0] = __float_as_uint(rt[k * LD_KR + fr]);
        a[kk][1] = __float_as_uint(rt[k * LD_KR + fr + 8]);
        a[kk][2] = __float_as_uint(rt[(k + 4) * LD_KR + fr]);
        a[kk][3] = __float_as_uint(rt[(k + 4) * LD_KR + fr + 8]);
      }
      dsc[kk] = sw128_desc(st + kk * 32);
    }
    pin(a, dsc);
#pragma unroll
    for (int j = 0; j < ND; j++) keep(d[j]);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 8; kk++) Mma<BS>::run(d, a[kk], dsc[kk]);
    wg_commit();
#pragma unroll
    for (int j = 0; j < ND; j++) keep(d[j]);
    wg_wait<1>();
    hold(aprev, dprev, never, smem0);
    cluster_wait();    // every block of the cluster has finished step i - 1
    cluster_arrive();  // this block has finished step i (tiles <= i - 1 retired, tile i waited for)
  };
  unsigned a0[BK / 8][4] = {}, a1[BK / 8][4] = {};
  unsigned long long q0[BK / 8] = {}, q1[BK / 8] = {};
  for (int i = 0; i < nt; i += 2) {
    step(i, a0, q0, a1, q1);
    if (i + 1 < nt) step(i + 1, a1, q1, a0, q0);
  }
  wg_wait<0>();
  hold(a0, q0, never, smem0);
  hold(a1, q1, never, smem0);
#pragma unroll
  for (int j = 0; j < ND; j++) keep(d[j]);
  cp_wait<0>();
  cluster_wait();  // every block past its last step: no push into or out of this one under way

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

}  // namespace sm90

// gemm90_{nt,nn,tt}_{128,256}(A, B, C, M, N, K, lda, ldb, ldc, bias, mask, ldmask, relu, W,
// splits): C[M x N] = op(A) op(B) with the epilogue of gemm_tile (training.cuh), same argument
// list less vecA / vecB (16-byte alignment is required here). Grid: ceil(Rdim / 128) x
// ceil(Sdim / BS) x splits blocks of 256 threads, Cfg<BS>::SMEM bytes of dynamic shared memory;
// Rdim, Sdim = M, N (nt, tt) or N, M (nn).
#define TREELINE_GEMM90(NAME, BS, RK, OT, OV, RPTR, SPTR, RDIM, SDIM, LDR, LDS)                 \
  extern "C" __global__ void __launch_bounds__(sm90::THREADS, 1)                              \
  NAME(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, \
       int N, int K, int lda, int ldb, int ldc, const float* __restrict__ bias,                \
       const float* __restrict__ mask, int ldmask, int relu, float* __restrict__ W,            \
       int splits) {                                                                          \
    sm90::gemm90<BS, RK, OT, OV>(RPTR, SPTR, C, RDIM, SDIM, K, LDR, LDS, ldc, bias, mask,      \
                                 ldmask, relu, W, splits);                                    \
  }
// TREELINE_GEMM90_OVERLAP: 1 (default) keeps one wgmma group in flight under the next tile's
// set-up, 0 retires each tile's group before the next tile starts. On the H200 (gemm_check,
// 2026-12-03 14:11 UTC) both were within the TF32 bound at all 36 shapes and 1 was 1.05-1.2x
// faster (512 x 4096 x 4096: 0.1015 against 0.1213 ms; 4096^3 NN 0.615 against 0.690 ms).
#ifndef TREELINE_GEMM90_OVERLAP
#define TREELINE_GEMM90_OVERLAP 1
#endif
TREELINE_GEMM90(gemm90_nt_128, 128, true, false, TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
TREELINE_GEMM90(gemm90_nt_256, 256, true, false, TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
TREELINE_GEMM90(gemm90_nn_128, 128, false, true, TREELINE_GEMM90_OVERLAP, B, A, N, M, ldb, lda)
TREELINE_GEMM90(gemm90_nn_256, 256, false, true, TREELINE_GEMM90_OVERLAP, B, A, N, M, ldb, lda)
TREELINE_GEMM90(gemm90_tt_128, 128, false, false, TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
TREELINE_GEMM90(gemm90_tt_256, 256, false, false, TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
#ifdef TREELINE_GEMM90_VARIANTS  // the harness: the other pipeline too, as gemm90x_*
TREELINE_GEMM90(gemm90x_nt_128, 128, true, false, !TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
TREELINE_GEMM90(gemm90x_nt_256, 256, true, false, !TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
TREELINE_GEMM90(gemm90x_nn_128, 128, false, true, !TREELINE_GEMM90_OVERLAP, B, A, N, M, ldb, lda)
TREELINE_GEMM90(gemm90x_nn_256, 256, false, true, !TREELINE_GEMM90_OVERLAP, B, A, N, M, ldb, lda)
TREELINE_GEMM90(gemm90x_tt_128, 128, false, false, !TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
TREELINE_GEMM90(gemm90x_tt_256, 256, false, false, !TREELINE_GEMM90_OVERLAP, A, B, M, N, lda, ldb)
#endif
#undef TREELINE_GEMM90

// gemm90{c,r,q}_{nt,nn,tt}_{128,256}: gemm90c in clusters, same arguments as gemm90_*: c: 2 x 1
// blocks share S, r: 1 x 2 share R, q: 2 x 2 share both. Grid: ceil(Rdim / 128) rounded up to a
// multiple of CX x ceil(Sdim / BS) rounded up to a multiple of CY x splits; dynamic shared
// memory sm90::smem_cluster<BS>().
#define TREELINE_GEMM90C(NAME, BS, RK, OT, CX, CY, RPTR, SPTR, RDIM, SDIM, LDR, LDS)             \
  extern "C" __global__ void __cluster_dims__(CX, CY, 1) __launch_bounds__(sm90::THREADS, 1)   \
  NAME(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, \
       int N, int K, int lda, int ldb, int ldc, const float* __restrict__ bias,                \
       const float* __restrict__ mask, int ldmask, int relu, float* __restrict__ W,            \
       int splits) {                                                                          \
    sm90::gemm90c<BS, RK, OT, CX, CY>(RPTR, SPTR, C, RDIM, SDIM, K, LDR, LDS, ldc, bias, mask, \
                                      ldmask, relu, W, splits);                               \
  }
#define TREELINE_GEMM90C_SET(P, CX, CY)                                                            \
  TREELINE_GEMM90C(gemm90##P##_nt_128, 128, true, false, CX, CY, A, B, M, N, lda, ldb)             \
  TREELINE_GEMM90C(gemm90##P##_nt_256, 256, true, false, CX, CY, A, B, M, N, lda, ldb)             \
  TREELINE_GEMM90C(gemm90##P##_nn_128, 128, false, true, CX, CY, B, A, N, M, ldb, lda)             \
  TREELINE_GEMM90C(gemm90##P##_nn_256, 256, false, true, CX, CY, B, A, N, M, ldb, lda)             \
  TREELINE_GEMM90C(gemm90##P##_tt_128, 128, false, false, CX, CY, A, B, M, N, lda, ldb)            \
  TREELINE_GEMM90C(gemm90##P##_tt_256, 256, false, false, CX, CY, A, B, M, N, lda, ldb)
#ifdef TREELINE_GEMM90_CLUSTER_VARIANTS  // the harness only: TrainingKernels does not use them
TREELINE_GEMM90C_SET(c, 2, 1)
TREELINE_GEMM90C_SET(r, 1, 2)
TREELINE_GEMM90C_SET(q, 2, 2)
#endif
#undef TREELINE_GEMM90C_SET
#undef TREELINE_GEMM90C

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (32 x 32 tiles through shared
// memory; grid ceil(cols / 32) x ceil(rows / 32), 32 x 8 threads): B [k][n] -> [n][k] before a
// TN product.
extern "C" __global__ void gemm90_transpose(const float* __restrict__ src, int rows, int cols,
                                            int lds, float* __restrict__ dst, int ldd) {
  __shared__ float tile[32][33];
  int c = blockIdx.x * 32 + threadIdx.x;
  for (int y = threadIdx.y; y < 32; y += 8) {
    int r = blockIdx.y * 32 + y;
    if (r < rows && c < cols) tile[y][threadIdx.x] = src[(long long)r * lds + c];
  }
  __syncthreads();
  int r = blockIdx.y * 32 + threadIdx.x;
  for (int y = threadIdx.y; y < 32; y += 8) {
    int cc = blockIdx.x * 32 + y;
    if (r < rows && cc < cols) dst[(long long)cc * ldd + r] = tile[threadIdx.x][y];
  }
}
