#!/usr/bin/env python3
# No-GPU check of gemm_sm90.cuh's index arithmetic (python3 + numpy, ~3 s): replays load_tile,
# the fragment loads and the epilogue of gemm90 as written there, with wgmma modelled on the
# CUTLASS layouts (ALayout_64x8, CLayout_64xN) and a K-major 128-byte-swizzled B descriptor, and
# compares C with numpy for the nt / nn / tt kernels at odd shapes, and the same for the TMA
# kernels of gemm_sm90_next.cuh (run_tma). Keep it in step with the kernels.
# Model of gemm90's index arithmetic for one launch: smem placement by load_tile, the wgmma
# semantics (A fragments per CUTLASS ALayout_64x8, B through a K-major SW128 descriptor, D per
# CLayout_64xN), the epilogue mapping. Checks against numpy for the three kinds.
import numpy as np
BR, BK, LD_RK, LD_KR = 128, 32, 36, 136
def run(kind, M, N, K, BS, rng):
    A = rng.standard_normal((M, K)); B = rng.standard_normal((K, N))
    # storage per kind (C = A @ B)
    if kind == 'nt':   Ast = A.copy(); Bst = B.T.copy()      # A [m][k], B [n][k]
    if kind == 'nn':   Ast = A.copy(); Bst = B.copy()        # A [m][k], B [k][n]
    if kind == 'tt':   Ast = A.T.copy(); Bst = B.T.copy()    # A [k][m], B [n][k]
    if kind == 'nt': R, S, Rdim, Sdim, RK, OT = Ast, Bst, M, N, True, False
    if kind == 'nn': R, S, Rdim, Sdim, RK, OT = Bst, Ast, N, M, False, True
    if kind == 'tt': R, S, Rdim, Sdim, RK, OT = Ast, Bst, M, N, False, False
    Rf = R.ravel(); Sf = S.ravel(); ldr = R.shape[1]; lds = S.shape[1]
    C = np.full((M, N), np.nan)
    tilesK = (K + BK - 1) // BK
    for bx in range((Rdim + BR - 1) // BR):
        for by in range((Sdim + BS - 1) // BS):
            r0, s0 = bx * BR, by * BS
            d = np.zeros((2, 128, BS // 2))  # [wg][thread][reg]
            for kt in range(tilesK):
                k0 = kt * BK
                sS = np.zeros(BS * 32); sR = np.zeros(4608)
                for e in range(BS * 8):
                    s, c = e >> 3, e & 7; gs, gk = s0 + s, k0 + c * 4
                    nb = min(4, max(0, K - gk)) if gs < Sdim else 0
                    dst = s * 32 + ((c ^ (s & 7)) * 4)
                    for q in range(nb): sS[dst + q] = Sf[gs * lds + gk + q]
                if RK:
                    for e in range(BR * 8):
                        r, c = e >> 3, e & 7; gr, gk = r0 + r, k0 + c * 4
                        nb = min(4, max(0, K - gk)) if gr < Rdim else 0
                        for q in range(nb): sR[r * LD_RK + c * 4 + q] = Rf[gr * ldr + gk + q]
                else:
                    for e in range(BK * (BR // 4)):
                        k, c = e // (BR // 4), e % (BR // 4); gk, gr = k0 + k, r0 + c * 4
                        nb = min(4, max(0, Rdim - gr)) if gk < K else 0
                        for q in range(nb): sR[k * LD_KR + c * 4 + q] = Rf[gk * ldr + gr + q]
                for wg in range(2):
                    for kk in range(4):
                        # fragments of each thread
                        Am = np.zeros((64, 8))
                        for tid in range(128):
                            wi, lane = tid >> 5, tid & 31; g, t = lane >> 2, lane & 3
                            fr = wg * 64 + wi * 16 + g; k = kk * 8 + t
                            if RK: a = [sR[fr*LD_RK+k], sR[(fr+8)*LD_RK+k], sR[fr*LD_RK+k+4], sR[(fr+8)*LD_RK+k+4]]
                            else:  a = [sR[k*LD_KR+fr], sR[k*LD_KR+fr+8], sR[(k+4)*LD_KR+fr], sR[(k+4)*LD_KR+fr+8]]
                            # ALayout_64x8: v0 -> m+8, v1 -> k+4 ; thread t0 -> k, t1 -> m, t2 -> m+16
                            for v in range(4):
                                m_ = wi * 16 + g + (v & 1) * 8; k_ = t + (v >> 1) * 4
                                Am[m_, k_] = a[v]
                        # B via descriptor: start = stage + kk*32 bytes; element (n,k) addr
                        Bm = np.zeros((8, BS))
                        for n in range(BS):
                            for k in range(8):
                                addr = kk * 32 + (n % 8) * 128 + (n // 8) * 1024 + k * 4
                                phys = addr ^ (((addr >> 7) & 7) << 4)
                                Bm[k, n] = sS[phys // 4]
                        D = Am @ Bm  # 64 x BS
                        for tid in range(128):
                            wi, lane = tid >> 5, tid & 31; g, t = lane >> 2, lane & 3
                            for j in range(BS // 8):
                                for v in range(4):
                                    m_ = wi * 16 + g + (v >> 1) * 8; n_ = j * 8 + 2 * t + (v & 1)
                                    d[wg, tid, 4 * j + v] += D[m_, n_]
            for wg in range(2):
                for tid in range(128):
                    wi, lane = tid >> 5, tid & 31; g, t = lane >> 2, lane & 3
                    fr = wg * 64 + wi * 16 + g
                    for j in range(BS // 8):
                        for v in range(4):
                            rr = r0 + fr + (v >> 1) * 8; ss = s0 + j * 8 + 2 * t + (v & 1)
                            gi, gj = (ss, rr) if OT else (rr, ss)
                            if rr < Rdim and ss < Sdim: C[gi, gj] = d[wg, tid, 4 * j + v]
    ref = A @ B
    err = np.nanmax(np.abs(C - ref)) if not np.isnan(C).any() else float('inf')
    print(kind, M, N, K, BS, 'max err', err)
    return err < 1e-9
def pipeline(stages, overlap, nt):
    # replays gemm90's k-loop schedule (cp.async groups, stage refills, wgmma groups in flight):
    # a stage refilled only when no unretired wgmma group reads it, a tile multiplied only after
    # its copy group has completed (cp.async.wait_group LEAD - 1)
    lead = stages - 2 if overlap else stages - 1
    committed = []  # group g -> tile or None
    for p in range(lead): committed.append(p if p < nt else None)
    inflight = []   # tiles whose wgmma group is not retired
    for i in range(nt):
        done = len(committed) - (lead - 1)          # groups 0 .. done-1 complete
        if not any(t == i for t in committed[:done]): return False
        if i + lead < nt:
            tgt = (i + lead) % stages
            if any(t % stages == tgt for t in inflight + [i]): return False
            committed.append(i + lead)
        else:
            committed.append(None)
        inflight.append(i)
        inflight = inflight[-1:] if overlap else []   # wait_group 1 / 0
        if overlap and len(inflight) > 1: return False
    return True
ok = all(pipeline(st, ov, nt) for st in (4, 6) for ov in (False, True) for nt in range(1, 40))
print('pipeline schedule', 'ok' if ok else 'MISMATCH')
rng = np.random.default_rng(1)
for kind in ('nt', 'nn', 'tt'):
    ok &= run(kind, 131, 139, 37, 128, rng)
ok &= run('nn', 70, 260, 9, 256, rng)
# gemm_sm90_next.cuh (gemm90t*): TMA-placed tiles (128-byte swizzle: the 16-byte chunk of
# logical byte b goes to b ^ (((b >> 7) & 7) << 4) in a 1024-aligned stage, zeros outside the
# matrix), SS: R [r][k] read through descriptors (consumer warpgroup cw at +8192 cw bytes);
# RS: R [k][r] in BR / 32 boxes {32 r, 32 k}, fragments at the kernel's off[v] + 256 kk.
def sw(b): return b ^ (((b >> 7) & 7) << 4)
def desc_tile(buf, base_bytes, rows, kk):   # rows x 8 (k) read by a K-major SW128 descriptor
    out = np.zeros((8, rows))
    for n in range(rows):
        for k in range(8):
            addr = base_bytes + kk * 32 + (n % 8) * 128 + (n // 8) * 1024 + k * 4
            out[k, n] = buf[sw(addr) // 4]
    return out
def run_tma(kind, M, N, K, BS, NWG, rng):
    BR = 64 * NWG
    A = rng.standard_normal((M, K)); B = rng.standard_normal((K, N))
    if kind == 'ss':  R, S, Rdim, Sdim, OT = A, B.T.copy(), M, N, False       # NT
    if kind == 'rst': R, S, Rdim, Sdim, OT = B, A, N, M, True                 # NN: R [k][n]
    if kind == 'rs':  R, S, Rdim, Sdim, OT = A.T.copy(), B.T.copy(), M, N, False  # TT: R [k][m]
    C = np.full((M, N), np.nan)
    banks_ok = True
    for bx in range((Rdim + BR - 1) // BR):
        for by in range((Sdim + BS - 1) // BS):
            r0, s0 = bx * BR, by * BS
            d = np.zeros((NWG, 128, BS // 2))
            for kt in range((K + BK - 1) // BK):
                k0 = kt * BK
                sS = np.zeros(BS * 32); sR = np.zeros(BR * 32)
                for s_ in range(BS):          # box {32 k, BS s} at (k0, s0)
                    for k in range(32):
                        if s0 + s_ < Sdim and k0 + k < K:
                            sS[sw(s_ * 128 + k * 4) // 4] = S[s0 + s_, k0 + k]
                if kind == 'ss':              # box {32 k, BR r} at (k0, r0)
                    for r in range(BR):
                        for k in range(32):
                            if r0 + r < Rdim and k0 + k < K:
                                sR[sw(r * 128 + k * 4) // 4] = R[r0 + r, k0 + k]
                else:                         # boxes {32 r, 32 k} at (r0 + 32 j, k0)
                    for j in range(BR // 32):
                        for k in range(32):
                            for c in range(32):
                                if k0 + k < K and r0 + 32 * j + c < Rdim:
                                    sR[sw(j * 4096 + k * 128 + c * 4) // 4] = R[k0 + k, r0 + 32 * j + c]
                for cw in range(NWG):
                    for kk in range(4):
                        if kind == 'ss':
                            Am = desc_tile(sR, cw * 8192, 64, kk).T
                        else:
                            Am = np.zeros((64, 8))
                            for tid in range(128):
                                wi, lane = tid >> 5, tid & 31; g, t = lane >> 2, lane & 3
                                fr = cw * 64 + wi * 16 + g
                                for v in range(4):
                                    r = fr + (v & 1) * 8; k = t + (v >> 1) * 4; rr = r & 31
                                    off = (r >> 5) * 1024 + k * 32 + ((((rr >> 2) ^ (k & 7)) << 2) | (rr & 3))
                                    m_ = wi * 16 + g + (v & 1) * 8; k_ = t + (v >> 1) * 4
                                    Am[m_, k_] = sR[off + kk * 256]
                            if bx == 0 and by == 0 and kt == 0 and cw == 0:  # banks of one warp's loads
                                for v in range(4):
                                    banks = {}
                                    for lane in range(32):
                                        g, t = lane >> 2, lane & 3
                                        r = g + (v & 1) * 8; k = t + (v >> 1) * 4; rr = r & 31
                                        off = (r >> 5) * 1024 + k * 32 + ((((rr >> 2) ^ (k & 7)) << 2) | (rr & 3))
                                        banks.setdefault(off % 32, set()).add(off)
                                    banks_ok &= max(len(x) for x in banks.values()) <= 2
                        Bm = desc_tile(sS, 0, BS, kk)
                        D = Am @ Bm
                        for tid in range(128):
                            wi, lane = tid >> 5, tid & 31; g, t = lane >> 2, lane & 3
                            for j in range(BS // 8):
                                for v in range(4):
                                    d[cw, tid, 4 * j + v] += D[wi * 16 + g + (v >> 1) * 8, j * 8 + 2 * t + (v & 1)]
            for cw in range(NWG):
                for tid in range(128):
                    wi, lane = tid >> 5, tid & 31; g, t = lane >> 2, lane & 3
                    fr = cw * 64 + wi * 16 + g
                    for j in range(BS // 8):
                        for v in range(4):
                            rr = r0 + fr + (v >> 1) * 8; ss = s0 + j * 8 + 2 * t + (v & 1)
                            gi, gj = (ss, rr) if OT else (rr, ss)
                            if rr < Rdim and ss < Sdim: C[gi, gj] = d[cw, tid, 4 * j + v]
    ref = A @ B
    err = np.nanmax(np.abs(C - ref)) if not np.isnan(C).any() else float('inf')
    print('tma', kind, M, N, K, BS, NWG, 'max err', err, 'banks <= 2-way' if banks_ok else 'BANK CONFLICTS')
    return err < 1e-9 and banks_ok
for kind, nwg, bs in (('ss', 2, 128), ('rst', 2, 128), ('rs', 3, 128), ('ss', 2, 256)):
    ok &= run_tma(kind, 133, 141, 37, bs, nwg, rng)
print("ALL OK" if ok else "MISMATCH")
raise SystemExit(0 if ok else 1)
