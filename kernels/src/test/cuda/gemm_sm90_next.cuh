// The harness's TMA kernels (gemm_check): those of the cubin (gemm_sm90_tma.cuh: 2 consumer
// warpgroups, 128 wide) and the variants measured beside them (256-wide NT, 3 warpgroups).
#pragma once
#include "../../main/cuda/gemm_sm90_tma.cuh"

TREELINE_GEMM90T(gemm90t2_ss_128, 2, 128, true, false)
TREELINE_GEMM90T(gemm90t2_ss_256, 2, 256, true, false)
TREELINE_GEMM90T(gemm90t2_rs_128, 2, 128, false, false)
TREELINE_GEMM90T(gemm90t2_rst_128, 2, 128, false, true)
#ifndef TREELINE_GEMM90T_NO3
TREELINE_GEMM90T(gemm90t3_ss_128, 3, 128, true, false)
TREELINE_GEMM90T(gemm90t3_rs_128, 3, 128, false, false)
TREELINE_GEMM90T(gemm90t3_rst_128, 3, 128, false, true)
#endif
#undef TREELINE_GEMM90T
