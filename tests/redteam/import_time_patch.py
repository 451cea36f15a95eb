"""Attack (changing what the worker checks, at import): the worker's self-check used to take its snapshot of the
worker's functions after the submission's import, so what the import replaced went unreported, and it read torch,
sys and threading through the names its module holds, so a proxy put there hid a trace hook or a mode. At import
this file wraps the worker's place_output, puts a proxy of sys, whose gettrace says None, in the worker's module,
and wraps the clock harness.device saved before the import (a builtin, which the check did not hold). All are
harmless here; the self-check, made before the import and calling the probes it bound then, reports them."""
import sys
import types

from _honest import honest

sample = sys.modules["harness.worker.sample"]
_place_output = sample.place_output


def place_output(out, data):
    return _place_output(out, data)


quiet_sys = types.ModuleType("sys")
quiet_sys.__dict__.update({k: v for k, v in vars(sys).items() if not k.startswith("__")})
quiet_sys.gettrace = lambda: None
sample.place_output = place_output
sample.sys = quiet_sys
device = sys.modules["harness.device"]
device._NOW = (lambda now: lambda: now())(device._NOW)


def custom_kernel(data):
    return honest(data)
