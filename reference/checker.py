"""The contest's correctness rule, with a report that says what went wrong and where.

Rule (gpu-mode `verbose_allclose`): elementwise |out - ref| <= atol + rtol * |ref|, computed in
the output dtype; NaN, +inf and -inf must appear in the same places; shapes must match. We also
require the output dtype to be the reference's (fp16) and, for group GEMM, one output per group.
rtol and atol are leaderboard_shapes.yaml's `tolerance`, their one home.
"""
from dataclasses import dataclass, field

import torch

from .cases import tolerance

RTOL, ATOL = tolerance()["rtol"], tolerance()["atol"]
MAX_LISTED = 5


@dataclass
class CheckReport:
    """Outcome of one comparison; `message` is what a person reads."""

    ok: bool
    message: str = ""
    mismatches: int = 0
    max_abs_error: float = 0.0
    first: list = field(default_factory=list)  # [(index tuple, received, expected)]


def _fail(message: str) -> CheckReport:
    return CheckReport(ok=False, message=message)


@torch.no_grad()
def mismatch_count(received: torch.Tensor, expected: torch.Tensor, rtol: float = RTOL, atol: float = ATOL) -> torch.Tensor:
    """Number of elements breaking the rule, as a device scalar (no host sync); same-shape tensors."""
    diff = torch.abs(received - expected)
    bad = diff > atol + rtol * torch.abs(expected)
    bad |= torch.isnan(received) ^ torch.isnan(expected)
    bad |= torch.isposinf(received) ^ torch.isposinf(expected)
    bad |= torch.isneginf(received) ^ torch.isneginf(expected)
    return bad.count_nonzero()


@torch.no_grad()
def compare(received, expected: torch.Tensor, rtol: float = RTOL, atol: float = ATOL, name: str = "output") -> CheckReport:
    """Compare one tensor against the reference; never raises on a wrong output."""
    if not isinstance(received, torch.Tensor):
        return _fail(f"{name}: expected a torch.Tensor, got {type(received).__name__}")
    if tuple(received.shape) != tuple(expected.shape):
        return _fail(f"{name}: shape {tuple(received.shape)} != expected {tuple(expected.shape)}")
    if received.dtype != expected.dtype:
        return _fail(f"{name}: dtype {received.dtype} != expected {expected.dtype}")
    got = received.detach().to(expected.device)
    count = int(mismatch_count(got, expected, rtol, atol).item())
    if count == 0:
        return CheckReport(ok=True)
    diff = torch.abs(got - expected)
    bad = (diff > atol + rtol * torch.abs(expected)) | (torch.isnan(got) ^ torch.isnan(expected))
    bad |= (torch.isposinf(got) ^ torch.isposinf(expected)) | (torch.isneginf(got) ^ torch.isneginf(expected))
    # the worst of the mismatches, not of every element: a large output may differ by more and still be within tolerance
    measured = torch.isfinite(diff) & bad
    max_abs = float(diff[measured].max().item()) if bool(measured.any()) else float("nan")
    first = []
    for index in torch.nonzero(bad)[:MAX_LISTED].tolist():
        i = tuple(index)
        first.append((i, float(got[i].item()), float(expected[i].item())))
    lines = [
        f"{name}: {count} of {expected.numel()} elements mismatch "
        f"(|out - ref| > {atol:g} + {rtol:g}*|ref|, or NaN/inf differ); largest |out - ref| among them = {max_abs:.6g}"
    ]
    lines += [f"  at {i}: got {g!r}, expected {e!r}" for i, g, e in first]
    if count > len(first):
        lines.append(f"  ... and {count - len(first)} more")
    return CheckReport(ok=False, message="\n".join(lines), mismatches=count, max_abs_error=max_abs, first=first)


@torch.no_grad()
def all_agree(pairs, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """True when every (received, expected) tensor pair matches in shape and dtype and no element breaks the rule,
    with one comparison per device and dtype (the pairs' elements side by side) and one host sync for them all;
    False sends the caller to compare() for the report."""
    groups = {}
    for received, expected in pairs:
        if not isinstance(received, torch.Tensor) or tuple(received.shape) != tuple(expected.shape) \
                or received.dtype != expected.dtype:
            return False
        got, want = groups.setdefault((expected.device, expected.dtype), ([], []))
        got.append(received.to(expected.device).reshape(-1))
        want.append(expected.reshape(-1))
    counts = [mismatch_count(torch.cat(got), torch.cat(want), rtol, atol).reshape(1) for got, want in groups.values()]
    return not counts or int(torch.cat(counts).sum().item()) == 0


def compare_groups(received, expected: list, rtol: float = RTOL, atol: float = ATOL) -> CheckReport:
    """Group GEMM: a list with one tensor per group, each compared as above."""
    if not isinstance(received, (list, tuple)):
        return _fail(f"expected a list of {len(expected)} tensors (one per group), got {type(received).__name__}")
    if len(received) != len(expected):
        return _fail(f"expected {len(expected)} outputs (one per group), got {len(received)}")
    failed = [compare(r, e, rtol, atol, name=f"group {g}") for g, (r, e) in enumerate(zip(received, expected))]
    failed = [r for r in failed if not r.ok]
    if not failed:
        return CheckReport(ok=True)
    return CheckReport(
        ok=False,
        message="\n".join(r.message for r in failed),
        mismatches=sum(r.mismatches for r in failed),
        max_abs_error=max(r.max_abs_error for r in failed),
        first=failed[0].first,
    )


def contest_checks(ref_kernel, check_output):
    """A task's check(data, output) -> CheckReport, and the contest-shaped
    check_implementation(data, output) -> (ok, message), both against ref_kernel(data)."""
    def check(data, output) -> CheckReport:
        return check_output(output, ref_kernel(data))

    def check_implementation(data, output) -> tuple[bool, str]:
        report = check(data, output)
        return report.ok, report.message
    return check, check_implementation
