"""One-off: GPU time of variants of the product-table decode (gemm shape 0, 4 l of 7168 x 8192 packed bytes)."""
import sys
import torch
sys.path.insert(0, ".")
from reference import nvfp4

def timed(name, fn, *args, reps=10):
    fn(*args); torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        out = fn(*args)
    end.record(); torch.cuda.synchronize()
    print(f"{name}: {start.elapsed_time(end) / reps:.2f} ms", flush=True)
    return out

torch.manual_seed(0)
packed = torch.randint(0, 256, (4, 7168, 8192), dtype=torch.uint8, device="cuda")
scales = torch.randint(0, 4, (4, 7168, 1024), dtype=torch.int8, device="cuda").to(torch.float8_e4m3fn)
table = nvfp4.scaled_byte_pairs(packed.device, torch.float16)
table32 = table.contiguous().view(torch.int32).flatten()

def rows_of(packed, scales):
    shifted = scales.view(torch.uint8).int() << 8
    return packed.unflatten(-1, (1024, 8)) + shifted[..., None]

rows = timed("rows (the widening add)", rows_of, packed, scales)
ref = timed("a: table[rows] (2-wide rows)", lambda r: table[r], rows).reshape(4, 7168, 16384)
b = timed("b: int32 table[rows]", lambda r: table32[r], rows)
c = timed("c: index_select", lambda r: torch.index_select(table32, 0, r.flatten()), rows)
d = timed("d: embedding", lambda r: torch.nn.functional.embedding(r, table), rows)
print("equal:", torch.equal(b.view(torch.float16).reshape(4, 7168, 16384), ref),
      torch.equal(c.view(torch.float16).reshape(4, 7168, 16384), ref), torch.equal(d.reshape(4, 7168, 16384), ref))
timed("whole dequantize", nvfp4.dequantize, packed, scales, torch.float16)
