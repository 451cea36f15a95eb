# Sourced by the device-run scripts: run_line LABEL STARTED RC JSON_FILE prints one line of runs.jsonl, the format
# scripts/wall_share.py reads: {label, seconds since STARTED (date +%s.%N), rc, out: run.py's --json output or null}.
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
