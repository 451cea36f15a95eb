"""Correct (plain torch), except that it kills its own process on the sweep lane named by
$SWEEP_TEST_DIE_ON (a lane's name, or 'any'): a GPU that fails under whatever runs there."""
import os
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent / "redteam"))
from _honest import honest  # noqa: E402


def custom_kernel(data):
    die_on = os.environ.get("SWEEP_TEST_DIE_ON")
    if die_on and die_on in (os.environ.get("NVFP4_ARENA_LANE"), "any"):
        os._exit(3)
    return honest(data)
