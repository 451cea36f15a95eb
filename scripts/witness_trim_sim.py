"""What a forger gains by choosing which samples the witness flags (harness/evaluator/witness.py), simulated with
the real Witness on CPU: after each sample it measured honestly, the forger reports a tiny time where the sample
was slower than a percentile of its honest times (75th to 95th), while staying under every verdict rule (a quarter
flagged, ten in a row). A flagged sample counts as the slowest kept so far, so its slow tail is replaced. Prints the
true and the counted mean per distribution of honest times and percentile. Usage: python scripts/witness_trim_sim.py"""
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.evaluator.witness import DISCARDED, IN_A_ROW, MAX_FLAGGED_SHARE, MIN_JUDGED, WARM_UP, Calibration, \
    Witness  # noqa: E402

SAMPLES = 1000


def counted_mean(draw, threshold: float, seed: int = 0) -> tuple[float, float, int]:
    """(true mean, mean as the job counts it, samples flagged) of one forged job."""
    rnd = random.Random(seed)
    witness, kept, true = Witness(Calibration([0.0, 1000.0]), "cuda"), [], []
    for n in range(SAMPLES + 1):
        real = draw(rnd)
        if n:
            true.append(real)
        room = (witness.flagged + 1) <= MAX_FLAGGED_SHARE * max(len(witness.excess_ns) + 1, MIN_JUDGED) - 1e-9
        forge = n > 0 and real > threshold and room and witness.flagged_in_a_row < IN_A_ROW - 1
        reported = 1.0 if forge else real
        assert not witness.judge(real + witness.remainder_ns, 0.0, reported, 0.0, 0.0)
        counted = None if witness.last == WARM_UP else reported
        if witness.last == DISCARDED:
            counted = max([counted, *kept]) if kept else None
        if counted is not None:
            kept.append(counted)
    assert not witness.judge_all()
    return statistics.mean(true), statistics.mean(kept), witness.flagged


def main():
    honest = {"1 ms, 1% noise": lambda r: r.gauss(1e6, 1e4),
              "1 ms, 5% of samples 10% slower": lambda r: 1e6 * (1.10 if r.random() < 0.05 else 1.0) * r.gauss(1, 0.005)}
    for name, draw in honest.items():
        rnd = random.Random(9)
        times = sorted(draw(rnd) for _ in range(20000))
        for percentile in (75, 85, 95):
            true, counted, flagged = counted_mean(draw, times[len(times) * percentile // 100])
            print(f"{name}, forged above the {percentile}th percentile: true mean {true / 1e3:.1f} µs, counted "
                  f"{counted / 1e3:.1f} µs, gain {100 * (1 - counted / true):.2f}%, {flagged} of {SAMPLES} flagged")


if __name__ == "__main__":
    main()
