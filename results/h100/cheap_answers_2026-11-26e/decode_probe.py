"""One-off: GPU time of the two fp16 decodes on a gemm shape-0 run of l (4 x 7168 x 8192 packed bytes)."""
import sys
import torch
sys.path.insert(0, ".")
from reference import nvfp4

def lookup_then_scale(packed, scales):
    codes = packed.view(torch.uint8)
    values = nvfp4.byte_pairs(codes.device).half()[codes.int()].flatten(-2)
    k = values.shape[-1]
    sf = scales.to(torch.float16)
    return values.view(*values.shape[:-1], k // 16, 16).mul_(sf[..., :k // 16, None]).flatten(-2)

def timed(fn, *args, reps=10):
    fn(*args); torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        out = fn(*args)
    end.record(); torch.cuda.synchronize()
    return start.elapsed_time(end) / reps, out

torch.manual_seed(0)
packed = torch.randint(0, 256, (4, 7168, 8192), dtype=torch.uint8, device="cuda")
scales = torch.randint(0, 4, (4, 7168, 1024), dtype=torch.int8, device="cuda").to(torch.float8_e4m3fn)
t_old, a = timed(lookup_then_scale, packed, scales)
t_new, b = timed(nvfp4.dequantize, packed, scales, torch.float16)
print(f"{torch.cuda.get_device_name()}: lookup then scale {t_old:.2f} ms, one lookup in the product table {t_new:.2f} ms, "
      f"equal: {torch.equal(a, b)}")
