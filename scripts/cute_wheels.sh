#!/usr/bin/env bash
# The CuTe DSL's wheels (gemv v8 and v9) for the lent GPU machines, which cannot download them. Its CUDA 13 library
# wheel (92 MB for 4.8.1) is larger than what one device call carries (64 MiB with the working tree), so it
# travels in two parts, one call each, on a machine kept warm between them.
#   here:    bash scripts/cute_wheels.sh fetch        -> .cute/part1 and .cute/part2 (git-ignored), each under the
#                                                         room one call leaves beside the tracked tree
#   device:  bash scripts/cute_wheels.sh stash        (carry .cute/part1; then, in the next call, .cute/part2)
#            bash scripts/cute_wheels.sh install      (once both are stashed: joins them, installs into /tmp/site)
# then `export PYTHONPATH=/tmp/site` as device_python.sh does.
set -eu
VERSION=${CUTE_VERSION:-4.8.1}
STASH=/tmp/cute-stash
case "${1:-}" in
fetch)
  grep -qx "/.cute/" .git/info/exclude || echo "/.cute/" >> .git/info/exclude
  rm -rf .cute && mkdir -p .cute/wheels .cute/part1 .cute/part2
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 -d .cute/wheels \
    "nvidia-cutlass-dsl==$VERSION" "nvidia-cutlass-dsl-libs-base==$VERSION" "nvidia-cutlass-dsl-libs-core==$VERSION" \
    "nvidia-cutlass-dsl-libs-cu13==$VERSION" \
    apache-tvm-ffi
  tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
  room=$(( 64 * 1024 * 1024 - tree - (1 << 20) ))  # a call's limit less the tree and a MiB of slack
  big=$(ls .cute/wheels/nvidia_cutlass_dsl_libs_cu13-*.whl)
  small=$(du -cb $(ls .cute/wheels/*.whl | grep -v libs_cu13) | tail -1 | cut -f1)
  first=$(( room - small ))
  head -c "$first" "$big" > ".cute/part1/$(basename "$big").part1"
  tail -c +"$(( first + 1 ))" "$big" > ".cute/part2/$(basename "$big").part2"
  cp $(ls .cute/wheels/*.whl | grep -v libs_cu13) .cute/part1/
  [ "$(du -cb .cute/part2/* | tail -1 | cut -f1)" -le "$room" ] || { echo "part2 does not fit one call"; exit 1; }
  du -b .cute/part1/* .cute/part2/*
  ;;
stash)
  mkdir -p "$STASH" && cp .cute/part*/* "$STASH/" && ls -la "$STASH"
  ;;
install)
  big=$(ls "$STASH"/*.part1 | sed 's/\.part1$//')
  cat "$big.part1" "$big.part2" > "$big"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$STASH"/*.whl "$big"
  PYTHONPATH=/tmp/site python3 -c "import cutlass, cutlass.cute; print('cutlass', cutlass.__version__ if hasattr(cutlass, '__version__') else 'imported')"
  ;;
*)
  echo "usage: $0 fetch | stash | install" >&2; exit 2
  ;;
esac
