# Sourced by the device-run scripts: run_line LABEL STARTED RC JSON_FILE prints one line of runs.jsonl, the format
# scripts/wall_share.py reads: {label, seconds since STARTED (date +%s.%N), rc, out: run.py's --json output or null};
# one runs run.py and appends that line; has, stamp and logged read STEPS and write $OUT/log.txt.
run_line() {
  python3 - "$@" <<'PY'
import json, sys, time
label, started, rc, path = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
try:
    out = json.load(open(path))
except ValueError:
    out = None
print(json.dumps({"label": label, "seconds": round(time.time() - started, 1), "rc": rc, "out": out}))
PY
}
one() {  # one LABEL SECONDS run.py-arguments...: appends {label, seconds, rc, out} to runs.jsonl
  local label=$1 limit=$2; shift 2
  local started rc
  started=$(date +%s.%N)
  timeout "$limit" python3 run.py "$@" --json > /tmp/one.json 2>> "$OUT/log.txt"
  rc=$?
  run_line "$label" "$started" "$rc" /tmp/one.json >> "$OUT/runs.jsonl"
  stamp "$label" "$rc"
}
has() { [[ "$STEPS" == *" $1 "* ]]; }  # has STEP: whether STEPS (" a b ") names it
stamp() { echo "$(date +%T) $1 rc=$2" >> "$OUT/log.txt"; }  # stamp WHAT RC: a step's exit status in log.txt
logged() {  # logged WHAT: the last command's exit status, stamped (read before $(date) resets it)
  stamp "$1" $?
}
