#!/usr/bin/env bash
# Nsight Compute evidence for a lineage note: throughput, pipes, occupancy and stalls of one kernel.
# Usage on the device: bash scripts/device_ncu.sh TASK VERSION SHAPE_INDEX KERNEL_REGEX  (writes $OUT/TASK_VERSION_SHAPE.ncu.txt)
# VERSION is vN or a file's path (its name without .py then stands for the version in the output).
set -u
task=$1; version=$2; index=$3; kernel=$4
file="submissions/$task/$version.py"
if [[ $version == *.py ]]; then file=$version; version=$(basename "$version" .py); fi
/usr/local/cuda/bin/ncu --clock-control none -k "regex:$kernel" \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
  --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
  python3 -m harness.tools.ncu --task "$task" --submission "$file" --index "$index" \
  > "$OUT/${task}_${version}_shape${index}.ncu.txt" 2>&1
grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Executed Ipc Active|Issue Slots Busy|Achieved Occupancy|Registers Per|Eligible Warps|Active Warps Per|highest-utilized|Memory Throughput  |L2 Cache Throughput|L1/TEX Cache Throughput|L2 Hit Rate|Mem Busy|Max Bandwidth" \
  "$OUT/${task}_${version}_shape${index}.ncu.txt" | sed "s/^/$task $version #$index: /"
# The five largest stall reasons (warps stalled per issued instruction); "selected" is the issuing warp, not a stall.
grep -E "smsp__average_warps_issue_stalled_" "$OUT/${task}_${version}_shape${index}.ncu.txt" | grep -v "_selected_" | sort -k3 -g -r | awk '!seen[$1]++' | head -n 5 |
  sed "s/^ */$task $version #$index stall: /"
