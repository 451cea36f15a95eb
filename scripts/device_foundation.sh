#!/usr/bin/env bash
# One device call: GPU identity, contest parity, calibration, reference times, GPU-only verdicts.
# Usage on the device: NVFP4_ARENA_COMMIT=<hash> bash scripts/device_foundation.sh   (writes into $OUT)
set -u
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
python3 -m harness.tools.contest_parity --contest-root carry/contest 2>&1 | tee "$OUT/parity.log" | grep -v IDENTICAL
python3 run.py calibrate
python3 scripts/reference_times.py 2>&1 | tee "$OUT/reference_times.log"
python3 run.py --task gemm --submission tests/submissions/illegal_address.py --mode test --no-record 2>&1 | tail -8
