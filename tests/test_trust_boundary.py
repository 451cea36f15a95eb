"""The worker's side of the process boundary holds no evaluator state: importing every module of
harness/worker/ and every harness module they import anywhere (at the top or inside a function), and whatever
those import, loads nothing from harness/evaluator/, where the seed key, the references and the kept copies
live, nor from the other folders of the trusted side (views/, sweep/, tools/). The modules at harness/'s top
level are shared, so they import from no folder at all."""
import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER_MODULES = sorted(f"harness.worker.{p.stem}" for p in (ROOT / "harness" / "worker").glob("*.py")
                        if p.stem != "__init__")
TRUSTED = ("evaluator", "views", "sweep", "tools")  # harness/'s folders that only the evaluator's side runs


def folder(module: str) -> str | None:
    """The harness folder a module lies in (harness.views.plots: views), None for a top-level one."""
    parts = module.split(".")
    return parts[1] if parts[0] == "harness" and len(parts) > 1 and (ROOT / "harness" / parts[1]).is_dir() else None


def named_imports() -> set:
    """Every harness module a worker file imports, wherever the import statement stands."""
    found = set()
    for path in (ROOT / "harness" / "worker").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names
                             if (ROOT / node.module.replace(".", "/") / f"{a.name}.py").exists())
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("harness"))
    return found

PROBE = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("harness", "reference")))))
"""


def test_worker_modules_import_nothing_from_the_evaluator():
    import json
    assert "harness.worker.__main__" in WORKER_MODULES and "harness.worker.sample" in WORKER_MODULES
    names = sorted(set(WORKER_MODULES) | named_imports())
    assert {"harness.channel", "harness.device", "harness.submission", "harness.layout"} <= set(names)
    proc = subprocess.run([sys.executable, "-c", PROBE, *names], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(WORKER_MODULES) <= set(loaded)
    assert [m for m in loaded if folder(m) in TRUSTED] == []


def test_every_folder_is_on_one_side_and_the_top_level_imports_from_none():
    folders = {p.name for p in (ROOT / "harness").iterdir() if (p / "__init__.py").is_file()}
    assert folders == {*TRUSTED, "worker"}
    shared = [p for p in (ROOT / "harness").glob("*.py") if p.stem != "__init__"]
    assert {"channel", "device", "layout", "protocol", "rules"} <= {p.stem for p in shared}
    for path in shared:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module if not node.level else "harness" + (f".{node.module}" if node.module else "")
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert [n for n in names if folder(n)] == [], path.name
