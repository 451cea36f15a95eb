# Sourced by the device-run scripts: a results folder under $OUT that starts as a copy of the stored
# records (so list/diff/submit --best see the whole lineage), and `pack_results ARCHIVE FOLDER...` to send it
# back as $OUT/<archive>.tgz for `python run.py merge`.
# NVFP4_ARENA_COMMIT must name the commit the working tree was copied from: the device copy's .git
# can be stale, and records would carry its hash.
: "${NVFP4_ARENA_COMMIT:?set NVFP4_ARENA_COMMIT to the commit this tree was copied from}"
export PYTHONUNBUFFERED=1 NVFP4_ARENA_RESULTS="$OUT/results"
# A call cut off while a process loads an extension leaves torch's build lock behind, and every later load of that
# extension on the same warm machine then waits on it without end. No process of an earlier call runs now.
find "${TORCH_EXTENSIONS_DIR:-$HOME/.cache/torch_extensions}" -name lock -print -delete 2>/dev/null
mkdir -p "$NVFP4_ARENA_RESULTS" && cp results/*.jsonl "$NVFP4_ARENA_RESULTS/"

pack_results() {  # pack_results ARCHIVE FOLDER...: $OUT/ARCHIVE.tgz
  local archive=$1; shift
  tar czf "$OUT/$archive.tgz" -C "$OUT" "$@" && rm -rf "$NVFP4_ARENA_RESULTS"
}
