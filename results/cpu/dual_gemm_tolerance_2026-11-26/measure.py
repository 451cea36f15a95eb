"""dual_gemm tolerance study on CPU. Usage: measure.py m n k seed [variants...] -> JSON line on stdout."""
import json, sys, time
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3]))
import torch
from reference import dual_gemm as dg
from reference.nvfp4 import dequantize
from reference.compute import matmul_nt
from reference.checker import mismatch_count

torch.set_num_threads(1)
m, n, k, seed = map(int, sys.argv[1:5])
variants = sys.argv[5].split(",") if len(sys.argv) > 5 else ["rn_exact", "c16_rn", "c64_rn", "c256_rn", "c16_rz", "splitk2", "seq_rn"]
t0 = time.time()
data = dg.generate_input(m=m, n=n, k=k, l=1, seed=seed, values="contest", device="cpu")
a, b1, b2, sfa, sfb1, sfb2, *_ = data
A32 = dequantize(a[:, :, 0], sfa[:, :, 0]); B132 = dequantize(b1[:, :, 0], sfb1[:, :, 0]); B232 = dequantize(b2[:, :, 0], sfb2[:, :, 0])
ref = dg.ref_kernel(data)[:, :, 0]                       # the repository's reference, fp16
gr, ur = matmul_nt(A32, B132), matmul_nt(A32, B232)       # its fp32 intermediates (same call as ref_kernel)
assert torch.equal((torch.nn.functional.silu(gr) * ur).half(), ref)
A, B1, B2 = A32.double(), B132.double(), B232.double()
G, U = A @ B1.T, A @ B2.T                                 # exact (every partial sum representable in fp64)
E = torch.nn.functional.silu(G) * U                        # exact output, unrounded (fp64 silu)
refd = ref.double()
tol = 1e-3 + 1e-3 * refd.abs()

def rz32(x):  # fp64 -> fp32 rounded toward zero
    r = x.float()
    over = r.double().abs() > x.abs()
    return torch.where(over, torch.nextafter(r, torch.zeros_like(r)), r)

def chunked(Bm, c, mode):
    acc = torch.zeros(m, n, dtype=torch.float32)
    for s in range(0, k, c):
        part = A[:, s:s + c] @ Bm[:, s:s + c].T            # exact chunk sum
        x = acc.double() + part                            # exact
        acc = x.float() if mode == "rn" else rz32(x)
    return acc

def seq(B):  # sequential per-term fp32 accumulation (products exact in fp32)
    acc = torch.zeros(m, n, dtype=torch.float32)
    for s in range(k):
        acc.addr_(A32[:, s], B[:, s])
    return acc

def splitk2(B):
    h = k // 2
    return matmul_nt(A32[:, :h], B[:, :h]) + matmul_nt(A32[:, h:], B[:, h:])

def intermediates(v):
    if v == "ref": return gr, ur
    if v == "rn_exact": return G.float(), U.float()
    if v.startswith("c") and "_" in v:
        c, mode = v[1:].split("_"); return chunked(B1, int(c), mode), chunked(B2, int(c), mode)
    if v == "seq_rn": return seq(B132), seq(B232)
    if v == "splitk2": return splitk2(B132), splitk2(B232)
    raise ValueError(v)

def epilogue(g, u, how):
    if how == "e32": return (torch.nn.functional.silu(g) * u).half()
    if how == "e16in":  # intermediates rounded to fp16 before silu and the product
        g16, u16 = g.half().float(), u.half().float(); return (torch.nn.functional.silu(g16) * u16).half()
    if how == "e64": return (torch.nn.functional.silu(g.double()) * u.double()).half()
    raise ValueError(how)

def stats(out, where=True):
    d = (out.double() - refd).abs()
    r = d / tol
    top = torch.topk(r.flatten(), 5)
    locs = []
    for val, idx in zip(top.values.tolist(), top.indices.tolist()):
        i, j = divmod(idx, n)
        locs.append(dict(ratio=round(val, 4), i=i, j=j, G=round(G[i, j].item(), 5), U=round(U[i, j].item(), 3),
                         exact=round(E[i, j].item(), 6), ref=ref[i, j].item(), got=out[i, j].item()))
    return dict(max=round(r.max().item(), 4), gt05=int((r > 0.5).sum()), gt09=int((r > 0.9).sum()),
                gt1=int((r > 1).sum()), checker_mismatch=int(mismatch_count(out, ref)), top=locs if where else None)

res = dict(m=m, n=n, k=k, seed=seed, outputs=m * n)
# the reference against the exact value
rE = (refd - E).abs() / (1e-3 + 1e-3 * E.abs())
res["ref_vs_exact64"] = dict(max=round(rE.max().item(), 4), gt05=int((rE > 0.5).sum()))
res["abs_err_ref"] = dict(g=(gr.double() - G).abs().max().item(), u=(ur.double() - U).abs().max().item())
res["G_std"], res["U_std"] = G.std().item(), U.std().item()
res["exact16"] = stats(E.half())
res["variants"] = {}
saved = {"G": G, "U": U}
for v in ["ref"] + variants:
    t = time.time()
    g, u = intermediates(v)
    saved[v] = (g, u)
    entry = dict(abs_err_g=(g.double() - G).abs().max().item(), abs_err_u=(u.double() - U).abs().max().item(),
                 dg_vs_ref=(g - gr).abs().max().item(), du_vs_ref=(u - ur).abs().max().item())
    for how in ("e32", "e16in", "e64"):
        entry[how] = stats(epilogue(g, u, how), where=(how != "e16in"))
    entry["secs"] = round(time.time() - t, 1)
    res["variants"][v] = entry
    print(f"# {v} done {entry['secs']}s", file=sys.stderr, flush=True)
res["secs"] = round(time.time() - t0, 1)
if len(sys.argv) > 6: torch.save(saved, sys.argv[6])
print(json.dumps(res))
