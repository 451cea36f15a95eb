"""Every command's --json against its schema in docs/json.md: strict JSON that parses, exactly the documented
keys with the documented types, snake_case keys throughout, no version's name as a key, numbers as numbers; and an
error as {"error": ...} with a non-zero exit. Views read stored fixture records; run and sweep run v0 on the CPU."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures_views import entry, run, store

from harness import results

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "json.md"
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
VERSION = re.compile(r"^v\d+")
NUMERIC = re.compile(r"^-?\d[\d,]*(\.\d+)?$")
HEX_IDS = (".run_id", ".sha256", ".code_sha256", ".commit")  # hex digests and random ids: strings by type


def parse(text: str):
    """docs/json.md's notation as a tree: ("object", {key: (type, optional)}), ("list", type), ("union", [types]),
    or ("atom", name)."""
    tokens = re.findall(r"[{}\[\]:,|?]|\w+", text)
    pos = 0

    def take(expected=None):
        nonlocal pos
        token = tokens[pos]
        assert expected is None or token == expected, f"expected {expected!r} at {token!r} in {text!r}"
        pos += 1
        return token

    def one():
        if tokens[pos] == "{":
            take("{")
            fields = {}
            while True:
                key = take()
                optional = tokens[pos] == "?"
                if optional:
                    take("?")
                take(":")
                fields[key] = (alternatives(), optional)
                if take() == "}":
                    return ("object", fields)
        if tokens[pos] == "[":
            take("[")
            inner = alternatives()
            take("]")
            return ("list", inner)
        return ("atom", take())

    def alternatives():
        options = [one()]
        while pos < len(tokens) and tokens[pos] == "|":
            take("|")
            options.append(one())
        return options[0] if len(options) == 1 else ("union", options)
    tree = alternatives()
    assert pos == len(tokens), f"left over in {text!r}: {tokens[pos:]}"
    return tree


ATOMS = {"str": lambda v: isinstance(v, str), "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
         "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "bool": lambda v: isinstance(v, bool),
         "null": lambda v: v is None, "record": lambda v: isinstance(v, dict)}


def mismatches(value, schema, where="$") -> list[str]:
    kind, spec = schema
    if kind == "union":
        found = [mismatches(value, option, where) for option in spec]
        return [] if any(not f for f in found) else min(found, key=len)
    if kind == "atom":
        return [] if ATOMS[spec](value) else [f"{where}: {value!r} is not {spec}"]
    if kind == "list":
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [m for i, item in enumerate(value) for m in mismatches(item, spec, f"{where}[{i}]")]
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not an object"]
    required = {k for k, (_, optional) in spec.items() if not optional}
    wrong = ([f"{where}: missing {sorted(required - set(value))}"] if required - set(value) else []) + (
        [f"{where}: undocumented {sorted(set(value) - set(spec))}"] if set(value) - set(spec) else [])
    return wrong + [m for k, v in value.items() if k in spec for m in mismatches(v, spec[k][0], f"{where}.{k}")]


def schemas() -> dict:
    """Each command's schema, from the ```text block under its ### heading in docs/json.md."""
    found = re.findall(r"^### (.+?)\n.*?```text\n(.*?)```", DOC.read_text(), re.MULTILINE | re.DOTALL)
    return {name: parse(block) for name, block in found}


def keys(data, under="$"):
    """(path, key) of every object key, at any depth."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield under, k
            yield from keys(v, f"{under}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from keys(v, f"{under}[{i}]")


def strings(data, under="$"):
    """(path, value) of every string outside stored records (passed through as docs/records.md has them)."""
    if isinstance(data, dict):
        for k, v in data.items():
            if k != "records" or not isinstance(v, list):
                yield from strings(v, f"{under}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from strings(v, f"{under}[{i}]")
    elif isinstance(data, str):
        yield under, data


def check(name: str, text: str):
    """The output parses as strict JSON, keeps the key and number rules, and matches its documented schema."""
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"{name}: {c} is not JSON"))
    bad = [f"{where}.{k}" for where, k in keys(data) if not SNAKE.match(k) or VERSION.match(k)]
    assert bad == [], f"{name}: keys that are not fixed snake_case names: {bad}"
    looks_numeric = [f"{where}={s!r}" for where, s in strings(data) if NUMERIC.match(s)
                     and not where.endswith(HEX_IDS)]  # a random hex id is all digits one time in a few hundred
    assert looks_numeric == [], f"{name}: numbers as strings: {looks_numeric}"
    wrong = mismatches(data, schemas()[name])
    assert wrong == [], f"{name} against docs/json.md: {wrong}"
    return data


def invoke(*args) -> tuple[int, str]:
    from run import cli
    result = CliRunner().invoke(cli, [*args, "--json"])
    return result.exit_code, result.stdout


@pytest.fixture
def stored(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400] * 3, host_us=30, host_bound=True)
          + run("gemv", "v1", "b", [100] * 3) + run("gemv", "v1", "c", [120] * 3))
    for e in (entry("gemv", "v1", 100), entry("gemv", "v0", 400, when="2026-11-21T10:00:00")):
        results.append(results_dir / "leaderboard.jsonl", e)
    return results_dir


def test_the_checks_reject_what_the_tables_print():
    """A table's header as a key, a version as a key, a number as a string, NaN, an undocumented key or type."""
    plot = {"task": "gemv", "timing": "arena", "paths": []}
    for bad, said in [({**plot, "geomean µs": 1.0}, "snake_case"), ({**plot, "v11": 1.0}, "snake_case"),
                      ({"error": "12.5"}, "numbers as strings"), ({**plot, "runs": 1}, "undocumented"),
                      ({**plot, "paths": [1]}, "is not str")]:
        with pytest.raises(AssertionError, match=said):
            check("errors" if "error" in bad else "plot", json.dumps(bad))
    with pytest.raises(pytest.fail.Exception):
        check("errors", '{"error": NaN}')


def test_every_command_with_json_has_a_documented_schema():
    from run import cli
    with_json = {"run" if name is None else name for name, command in [(None, cli), *cli.commands.items()]
                 if any(p.name == "as_json" for p in command.params)}
    assert set(schemas()) == with_json | {"diff --measure", "errors"}


@pytest.mark.parametrize("args, name", [(["list", "--task", "gemv"], "list"),
                                        (["diff", "--task", "gemv", "v0", "v1"], "diff"),
                                        (["leaderboard"], "leaderboard"),
                                        (["plot", "--task", "gemv"], "plot"),
                                        (["report"], "report")])
def test_views(stored, args, name):
    code, out = invoke(*args)
    assert code == 0, out
    data = check(name, out)
    if name == "diff":
        assert [v["version"] for v in data["versions"]] == ["v0", "v1"] and data["rows"][0]["index"] == 0
        first = {v["version"]: v for v in data["rows"][0]["versions"]}
        assert first["v0"]["mean_ns"] == 400_000 and first["v0"]["host_bound"] is True
        assert first["v1"]["speedup_vs_v0"] == pytest.approx(400 / 110) and first["v1"]["host_ns"] is None
        assert data["geomean"][1]["sol_multiple"] == pytest.approx(11)
    if name == "list":
        rows = {r["version"]: r for r in data["rows"]}
        assert rows["v1"]["geomean_ns"] == pytest.approx(110_000) and rows["v1"]["rank"] == 1
        assert rows["v0"]["parent"] is None and rows["v2"]["geomean_ns"] is None
    if name == "leaderboard":
        assert [r["geomean_ns"] for r in data["rows"]] == [100_000, 400_000] and len(data["rows"][0]["sha256"]) == 64


def test_diff_measure_with_one_round_has_an_open_interval(results_dir, monkeypatch):
    import harness.evaluator.session

    def measured(subs, shapes, rounds, on_round=None, timing="arena", on_fail=None):
        return {s.version: {0: [200.0 * (k + 1)] * rounds, 1: [300.0] * rounds} for k, s in enumerate(subs)}
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", measured)
    code, out = invoke("diff", "--task", "gemv", "--measure", "--rounds", "1", "--shapes", "smoke", "v0", "v1")
    assert code == 0, out
    data = check("diff --measure", out)
    v1 = data["rows"][0]["versions"][1]
    assert data["base"] == "v0" and data["rows"][0]["shape"] == "m=128 k=256 l=1"
    assert v1["speedup_vs_base"] == pytest.approx(0.5) and v1["speedup_high"] is None and v1["verdict"] == "one round: no interval"


def test_submit_best(results_dir, monkeypatch):
    import harness.evaluator.session
    store(results_dir, run("gemv", "v1", "a", [100, 100], gpu="cpu", kind="smoke")
          + run("gemv", "v0", "b", [400, 400], gpu="cpu", kind="smoke"))
    monkeypatch.setattr(harness.evaluator.session, "measure_interleaved", lambda subs, shapes, rounds, *a, **kw: {
        s.version: {0: [200.0, 201.0, 199.0], 1: [300.0, 299.0, 302.0]} for s in subs})
    code, out = invoke("submit", "--task", "gemv", "--best", "--candidates", "2", "--rounds", "3", "--seed", "1")
    assert code == 0, out
    data = check("submit", out)
    assert data["decision"]["winner"] == data["entry"]["version"] == "v0" and sorted(data["decision"]["tied"]) == ["v0", "v1"]
    assert [m["shape"] for m in data["entry"]["means"]] == ["m=128 k=256 l=1", "m=256 k=512 l=2"]


def test_sweep(results_dir):
    code, out = invoke("sweep", "--task", "gemv", "--versions", "v0", "--lanes", "1")
    assert code == 0, out
    job = check("sweep", out)["jobs"][0]
    assert job["status"] == "pass" and job["geomean_ns"] > 0 and job["records"] == 2


def test_run_and_an_error(results_dir):
    """The default command in a process of its own, stdout holding nothing but the JSON; an error likewise."""
    def cli(*args):
        return subprocess.run([sys.executable, str(ROOT / "run.py"), *args, "--json"], capture_output=True, text=True,
                              cwd=ROOT, timeout=300)
    proc = cli("--task", "gemv", "--submission", "v0", "--mode", "benchmark", "--case", "1")
    assert proc.returncode == 0, proc.stderr
    [summary] = check("run", proc.stdout)
    assert summary["passed"] and summary["geomean_ns"] > 0 and summary["records"][0]["index"] == 1
    proc = cli("diff", "--task", "gemv", "v0", "v1")
    error = check("errors", proc.stdout)["error"]  # this machine's one run, of one case: the scope views default to
    assert proc.returncode == 1 and "no arena-timed run of gemv on" in error
    assert "run benchmark mode without --case" in error
