"""Each of the contest's rules and the project's constants has one definition: the modes and the timing
methods in harness/rules.py, the repository's root in harness/paths.py, the tolerance in
leaderboard_shapes.yaml; every other module imports them, and no module spells a timing method's name."""
import ast
from pathlib import Path

from reference import checker
from reference.cases import tolerance

ROOT = Path(__file__).resolve().parent.parent
HOMES = {"MODES": "harness/rules.py", "RECORDED_MODES": "harness/rules.py", "DEFAULT_MODES": "harness/rules.py",
         "TIMINGS": "harness/rules.py", "DEFAULT_TIMING": "harness/rules.py", "ARENA": "harness/rules.py",
         "CONTEST": "harness/rules.py", "LEGACY_TIMING": "harness/protocol.py", "ROOT": "harness/paths.py"}


def code_files() -> list[Path]:
    return sorted([*ROOT.glob("harness/**/*.py"), *ROOT.glob("reference/*.py"), ROOT / "run.py"])


def assigned(path: Path) -> set[str]:
    """The names a module binds at its top level (including a tuple's names: A, B = ...)."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def test_each_constant_is_defined_in_its_home_alone():
    where = {}
    for path in code_files():
        for name in assigned(path) & set(HOMES):
            where.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert where == {name: [home] for name, home in HOMES.items()}


def test_timing_methods_are_named_by_their_constants():
    """The words arena and legacy as a value (not in a sentence) appear only where they are defined."""
    spelled = {}
    for path in code_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in ("arena", "legacy"):
                spelled.setdefault(node.value, []).append(str(path.relative_to(ROOT)))
    assert spelled == {"arena": ["harness/rules.py"], "legacy": ["harness/protocol.py"]}


def test_the_checker_applies_the_tolerance_of_the_shapes_file():
    assert (checker.RTOL, checker.ATOL) == (tolerance()["rtol"], tolerance()["atol"]) == (1e-3, 1e-3)
    for path in ROOT.glob("reference/*.py"):
        assert "harness" not in {n.split(".")[0] for n in imported(path)}, path.name  # reference/ stands alone


def imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found
