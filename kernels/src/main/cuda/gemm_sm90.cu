// The translation unit of treeline_sm90a.cubin (sm_90a only: wgmma): the Hopper GEMMs, the
// cp.async kernels (gemm_sm90.cuh) and the TMA kernels (gemm_sm90_tma.cuh, 2 consumer warpgroups,
// 128 wide; TrainingKernels uses them where it can encode tensor maps).
#include "gemm_sm90.cuh"
#include "gemm_sm90_tma.cuh"
TREELINE_GEMM90T(gemm90t2_ss_128, 2, 128, true, false)
TREELINE_GEMM90T(gemm90t2_rs_128, 2, 128, false, false)
TREELINE_GEMM90T(gemm90t2_rst_128, 2, 128, false, true)
