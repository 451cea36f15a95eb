"""The defenses of a timed run, one object each, with hooks around a sample (harness.timing):
`before_calls`, `after_calls` (the end event reached), `after_sample` (device synchronized) and
`after_all`. A hook returns "" or a message (a "fail" verdict), or a (status, message) pair. All of
them run outside the timed region; none imports the worker."""
from . import guard

STALE_HINT = ("\n(every earlier output was right, so the kernel may be returning outputs remembered from earlier "
              "calls: each timed call gets fresh inputs whose values are negated by a secret pattern)")
ESCAPE_MIN_NS = 50_000.0  # device work pending after the end event beyond this ...
ESCAPE_FRACTION = 0.25  # ... and beyond this share of the timed region ...
ESCAPE_NOISE_MULTIPLE = 4.0  # ... and beyond this many times the host's own noise (at start, and right after
#                               each sample with nothing pending) is suspicious ...
ESCAPE_REPEATS = 3  # ... and a verdict once it happens in this many samples in a row


def negate(expected):
    """The exact output for a negated operand: the expected output negated (per group for group GEMM)."""
    return [-e for e in expected] if isinstance(expected, list) else -expected


class Defense:
    def before_calls(self, sample):
        return ""

    def after_calls(self, sample):
        return ""

    def after_sample(self, sample):
        return ""

    def after_all(self):
        return ""


class EscapeWatch(Defense):
    """Work on other streams that outlasts the timed region (the hold keeps it from running before).
    Arena timing only: under the contest's loop, side-stream work can run during the clear, where no
    watch after the region sees it, and the first device-wide synchronize after a contest clear costs
    the host 45-370 µs with nothing left to run (scripts/pending_probe.py on an H100), which this watch
    would read as escaped work."""

    def __init__(self, noise_ns: float):
        self.threshold_ns = max(ESCAPE_MIN_NS, ESCAPE_NOISE_MULTIPLE * noise_ns)
        self.in_a_row = 0

    @staticmethod
    def host_noise_ns(device, probes: int = 20) -> float:
        """The largest 'pending' an empty region shows on this host: the clock reads' own noise."""
        worst = 0.0
        for _ in range(probes):
            device.synchronize()
            device.start()
            device.stop()
            worst = max(worst, device.pending_ns(device.wait_end()))
        return worst

    def after_calls(self, sample):
        control = ESCAPE_NOISE_MULTIPLE * sample.idle_pending_ns
        if sample.pending_ns <= max(self.threshold_ns, ESCAPE_FRACTION * sample.region_ns, control):
            self.in_a_row = 0
            return ""
        self.in_a_row += 1
        if self.in_a_row < ESCAPE_REPEATS:
            return ""
        return (f"the device was still busy {sample.pending_ns / 1e3:.0f} µs after the timed region "
                f"({sample.region_ns / 1e3:.0f} µs) ended, "
                f"{self.in_a_row} samples in a row: work escaped the timing events (side stream or thread)")


class ThreadWatch(Defense):
    def before_calls(self, sample):
        self.before = guard.threads()

    def after_sample(self, sample):
        return guard.new_threads(self.before)


class ReferenceCalls(Defense):
    """Calls into the evaluator's reference code from inside custom_kernel."""

    def __init__(self, trap: guard.ReferenceTrap):
        self.trap = trap

    def before_calls(self, sample):
        self.trap.inside = True

    def after_calls(self, sample):
        self.trap.inside = False

    def after_sample(self, sample):
        return self.trap.verdict()


class PersistingL2(Defense):
    def __init__(self, device, baseline: int):
        self.device, self.baseline = device, baseline

    def after_sample(self, sample):
        now = self.device.persisting_l2_limit()
        if now != self.baseline:
            return (f"the submission changed the persisting-L2 cache limit (cudaLimitPersistingL2CacheSize: "
                    f"{self.baseline} -> {now} bytes)")
        return ""


class OutputObjects(Defense):
    """Plain tensors, aliasing no input but their own c, distinct across the sample's calls."""

    def __init__(self, outputs_allowed):
        self.outputs_allowed = outputs_allowed

    def after_sample(self, sample):
        found = guard.distinct_outputs(sample.outputs)
        for i, (out, data) in enumerate(zip(sample.outputs, sample.inputs)):
            if found:
                break
            problem = guard.inspect_outputs(out, data, self.outputs_allowed(data))
            found = f"input {i}: {problem}" if problem else ""
        return found


class OutputValues(Defense):
    """Every output of every sample against the expected one, negated where its input was."""

    def __init__(self, expected: list, compare_all):
        self.expected = expected
        self.flipped = [negate(x) for x in expected]
        self.stacked = guard.StackedCheck(expected)
        self.compare_all = compare_all

    def after_sample(self, sample):
        if self.stacked.ok(sample.outputs, sample.signs):
            return ""
        wanted = [self.flipped[i] if s else self.expected[i] for i, s in enumerate(sample.signs)]
        failure = self.compare_all(sample.outputs, wanted)
        return f"{failure}{STALE_HINT}" if failure else ""


class IntegrityWatch(Defense):
    def __init__(self, integrity: guard.Integrity):
        self.integrity = integrity

    def after_sample(self, sample):
        replaced = self.integrity.replaced()
        return ("tampered", "the submission replaced harness or torch functions: " + ", ".join(replaced)) \
            if replaced else ""


class InputsUnchanged(Defense):
    """The tensors every call reads as they are (all but the negated operand and c) stay unchanged."""

    def __init__(self, shared: list):
        self.shared = shared
        self.prints = guard.fingerprint(shared)

    def after_all(self):
        if guard.fingerprint(self.shared) != self.prints:
            return "the submission modified its input tensors during the timed samples"
        return ""
