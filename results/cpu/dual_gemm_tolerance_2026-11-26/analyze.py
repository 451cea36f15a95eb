"""Pairwise comparison of saved intermediates: analyze.py arr_*.pt -> JSON lines.
kernel variants vs reference variants, with the repository's rule (fp16 arithmetic, reference.checker.mismatch_count)
and the ratio |K - R| / (1e-3 + 1e-3 |R|) in fp64; plus a tail estimate for the small-output mechanism."""
import json, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import torch
from reference.checker import mismatch_count
torch.set_num_threads(1)
silu = torch.nn.functional.silu

def out16(g, u):  # the epilogue of the reference and of v22/v23: fp32 silu * u, then fp16
    return (silu(g) * u).half()

def dsilu(x):
    s = torch.sigmoid(x); return s * (1 + x * (1 - s))

KERNELS = ["ref", "rn_exact", "c16_rn", "c64_rn", "c256_rn", "c16_rz", "splitk2", "seq_rn"]
REFS = ["ref", "seq_rn", "rn_exact"]
for path in sys.argv[1:]:
    d = torch.load(path)
    G, U = d["G"], d["U"]
    E = silu(G) * U
    res = dict(file=path, outputs=G.numel())
    outs = {v: out16(*d[v]) for v in KERNELS if v in d}
    # each reference against the exact value
    res["ref_vs_exact"] = {r: round(((outs[r].double() - E).abs() / (1e-3 + 1e-3 * E.abs())).max().item(), 4) for r in REFS}
    res["abs_err"] = {v: [(d[v][0].double() - G).abs().max().item(), (d[v][1].double() - U).abs().max().item()] for v in outs}
    table = {}
    for r in REFS:
        R = outs[r]; Rd = R.double(); tol = 1e-3 + 1e-3 * Rd.abs()
        spacing = (torch.nextafter(R.abs(), torch.full_like(R, float("inf"))) - R.abs()).double()
        gr, ur = d[r]
        a = (dsilu(G) * U).abs() / tol          # sensitivity of the output to an error in A@B1
        b = silu(G).abs() / tol                  # ... and to one in A@B2
        for kname in KERNELS:
            if kname == r or kname not in outs: continue
            K = outs[kname]
            diff = (K.double() - Rd).abs(); ratio = diff / tol
            ulps = diff / spacing
            multi = ulps > 1.5                   # not a one-ulp rounding flip
            dg, du = (d[kname][0] - gr).double().abs(), (d[kname][1] - ur).double().abs()
            pred = a * dg + b * du               # linearised |K - R| / tol before the fp16 rounding
            top = []
            for idx in torch.topk(torch.where(multi, ratio, torch.zeros_like(ratio)).flatten(), 3).indices.tolist():
                i, j = divmod(idx, G.shape[1])
                top.append(dict(ratio=round(ratio[i, j].item(), 3), ulps=round(ulps[i, j].item(), 1), G=round(G[i, j].item(), 4),
                                U=round(U[i, j].item(), 2), ref=R[i, j].item(), got=K[i, j].item(), dg=dg[i, j].item(), du=du[i, j].item()))
            TS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
            table[f"{kname}|{r}"] = dict(
                max=round(ratio.max().item(), 4), gt05=int((ratio > 0.5).sum()), gt09=int((ratio > 0.9).sum()), gt1=int((ratio > 1).sum()),
                checker=int(mismatch_count(K, R)),
                multi_max=round(ratio[multi].max().item(), 4) if multi.any() else 0.0,
                multi_gt={str(t): int((ratio[multi] > t).sum()) for t in TS},
                pred_gt={str(t): int((pred > t).sum()) for t in TS},
                dg_max=dg.max().item(), du_max=du.max().item(), top_multi=[x for x in top if x["ulps"] > 1.5])
    res["pairs"] = table
    # tail model for a kernel vs a reference: P(a*|dg| + b*|du| > t) with (a, b) and (dg, du) drawn independently
    tails = {}
    for r in REFS:
        R = outs[r]; tol = 1e-3 + 1e-3 * R.double().abs()
        a = ((dsilu(G) * U).abs() / tol).flatten(); b = (silu(G).abs() / tol).flatten()
        for kname in ("c16_rn", "c64_rn", "c16_rz", "seq_rn", "rn_exact", "ref"):
            if kname == r: continue
            dg = (d[kname][0] - d[r][0]).double().abs().flatten().sort().values
            du = (d[kname][1] - d[r][1]).double().abs().flatten().sort().values
            n = dg.numel(); out = {}
            for t in (0.1, 0.2, 0.3, 0.5, 0.7, 1.0):
                # P_i = P(|dg| > t/a_i) + P(|du| > t/b_i), averaged over outputs i
                pg = 1 - torch.searchsorted(dg, t / a, right=True).double() / n
                pu = 1 - torch.searchsorted(du, t / b, right=True).double() / n
                out[str(t)] = (pg + pu).mean().item() * n  # expected count per input
            tails[f"{kname}|{r}"] = out
    res["tail_per_output"] = tails
    print(json.dumps(res), flush=True)
