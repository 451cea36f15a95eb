"""Each lineage root (v0) passes every contest test shape, with contest and general values."""
import copy
import pytest

from harness.paths import ROOT
from harness.submission import import_submission
from reference import TASKS, get_task
from reference.cases import cases


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("values", ["contest", "general"])
def test_v0_passes_all_contest_test_shapes(task, values):
    mod = get_task(task)
    kernel = import_submission(ROOT / "submissions" / task / "v0.py").custom_kernel
    for case in cases(task, "tests"):
        data = mod.generate_input(**case.args, values=values)
        report = mod.check(data, kernel(copy.deepcopy(data)))
        assert report.ok, f"{case.label}: {report.message}"
