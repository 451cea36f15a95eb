#!/usr/bin/env bash
# The CuTe DSL's wheels (gemv v8 and v9) for the lent GPU machines, which cannot download them. Together they are
# larger than what one device call carries (64 MiB with the working tree), so they travel in parts, one call each,
# on a machine kept warm between the calls: as many parts as the room beside the tracked tree needs (three for 4.8.1
# beside a 17 MB tree).
#   here:    bash scripts/cute_wheels.sh fetch        -> .cute/part1, .cute/part2, ... (git-ignored), each under the
#                                                         room one call leaves beside the tracked tree
#   device:  bash scripts/cute_wheels.sh stash        (carry .cute/part1; then, in the next call, .cute/part2; ...)
#            bash scripts/cute_wheels.sh install      (once every part is stashed: joins them, installs into /tmp/site)
# then `export PYTHONPATH=/tmp/site` as device_python.sh does.
set -eu
VERSION=${CUTE_VERSION:-4.8.1}
STASH=/tmp/cute-stash
case "${1:-}" in
fetch)
  grep -qx "/.cute/" .git/info/exclude || echo "/.cute/" >> .git/info/exclude
  rm -rf .cute && mkdir -p .cute/wheels
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 -d .cute/wheels \
    "nvidia-cutlass-dsl==$VERSION" "nvidia-cutlass-dsl-libs-base==$VERSION" "nvidia-cutlass-dsl-libs-core==$VERSION" \
    "nvidia-cutlass-dsl-libs-cu13==$VERSION" \
    apache-tvm-ffi
  tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
  room=$(( 64 * 1024 * 1024 - tree - (1 << 20) ))  # a call's limit less the tree and a MiB of slack
  big=$(ls .cute/wheels/nvidia_cutlass_dsl_libs_cu13-*.whl)
  mkdir -p .cute/part1 && cp $(ls .cute/wheels/*.whl | grep -v libs_cu13) .cute/part1/
  first=$(( room - $(du -cb .cute/part1/* | tail -1 | cut -f1) ))  # the small wheels and the big one's head
  [ "$first" -gt 0 ] || { echo "the small wheels alone do not fit one call"; exit 1; }
  size=$(stat -c %s "$big") offset=0 part=1
  while [ "$offset" -lt "$size" ]; do
    take=$(( part == 1 ? first : room ))
    mkdir -p ".cute/part$part"
    tail -c +"$(( offset + 1 ))" "$big" | head -c "$take" > ".cute/part$part/$(basename "$big").part$part"
    offset=$(( offset + take )) part=$(( part + 1 ))
  done
  du -b .cute/part*/*
  ;;
stash)
  mkdir -p "$STASH" && cp .cute/part*/* "$STASH/" && ls -la "$STASH"
  ;;
install)
  big=$(ls "$STASH"/*.part1 | sed 's/\.part1$//')
  parts=$(ls "$big".part* | wc -l)
  for n in $(seq 1 "$parts"); do cat "$big.part$n"; done > "$big"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$STASH"/*.whl "$big"
  PYTHONPATH=/tmp/site python3 -c "import cutlass, cutlass.cute; print('cutlass', cutlass.__version__ if hasattr(cutlass, '__version__') else 'imported')"
  ;;
*)
  echo "usage: $0 fetch | stash | install" >&2; exit 2
  ;;
esac
