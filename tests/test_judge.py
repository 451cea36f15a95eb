"""The timed loop's steps after a sample, driven with numbers alone: the evaluator's clock's calibration and judge,
the witness's judge, and the tally that keeps samples and decides when a job is done."""
import pytest

from harness.evaluator.clock import PREEMPTED_NS, ClockCalibration, ClockReading, WritesModel
from harness.evaluator.judge import INTERRUPTED_NS, ClockJudge, Judgement, Tally, WitnessJudge
from harness.evaluator.witness import Calibration, Witness
from harness.rules import StopRule


def test_clock_calibration_is_the_median_and_a_robust_spread():
    # windows less the worker's events, in ns: median 300_000, absolute deviations 0, 1000, 1000, 2000, 90_000
    fit = ClockCalibration.fit([300_000.0, 299_000.0, 301_000.0, 298_000.0, 390_000.0])
    assert fit.fixed_ns == 300_000.0
    assert fit.spread_ns == pytest.approx(1.4826 * 1000.0)  # the median deviation: one outlier does not widen it
    assert fit.samples == 5


CALIBRATION = ClockCalibration(fixed_ns=300_000.0, spread_ns=600.0, samples=24)


def reading(calls_us: float, writes_us: float = 400.0) -> ClockReading:
    return ClockReading(window_ns=300_000.0 + calls_us * 1e3, writes_ns=writes_us * 1e3)


def test_the_clock_is_the_number_and_the_worker_a_cross_check():
    judge = ClockJudge(CALIBRATION, calls=50)
    assert judge.judge(reading(600.0), region_ns=590_000.0, early_call=None) == Judgement()  # the first: warm-up
    kept = judge.judge(reading(600.0), region_ns=300_000.0, early_call=None)  # a worker that reports half
    assert kept.verdict == "" and kept.per_call_ns == 12_000.0 and kept.worker_per_call_ns == 6_000.0
    summary = judge.summary()
    assert summary["uncertainty_ns"] == 12.0 and summary["uncertainty_share"] == pytest.approx(600.0 / 600_000.0)
    assert summary["fixed_ns"] == 300_000.0 and summary["preempted"] == 0


def test_a_worker_that_reports_more_than_the_window_or_finishes_after_done_is_tampered():
    judge = ClockJudge(CALIBRATION, calls=1)
    long = judge.judge(reading(10.0), region_ns=320_000.0, early_call=None)  # window 310 µs
    assert "reported 320.0 µs of calls inside a window the evaluator's clock saw last 310.0 µs" in long.verdict
    assert judge.judge(reading(10.0), region_ns=311_000.0, early_call=None).verdict == ""  # within its resolution
    early = judge.judge(reading(10.0), region_ns=9_000.0, early_call=3)
    assert "said \"done\" before its outputs were written (call 3's output" in early.verdict


def test_a_sample_whose_writes_another_context_interrupted_is_not_kept_as_its_own():
    judge = ClockJudge(CALIBRATION, calls=1)
    judge.judge(reading(20.0, writes_us=400.0), 19_000.0, None)
    assert not judge.judge(reading(20.0, writes_us=900.0), 19_000.0, None).discarded  # slower, under a time slice
    turned = judge.judge(reading(5.0, writes_us=400.0 + PREEMPTED_NS / 1e3 + 1.0), 4_000.0, None)
    assert turned.discarded and judge.summary()["preempted"] == 1


def test_the_writes_model_is_fitted_on_the_null_samples_configurations():
    # the calibration's three: a small slot and a large one (one copy each), sixteen tiny slots; ns
    small, many, large = (64 << 20, 1), (16 * 12_288, 16), (512 << 20, 1)
    truth = WritesModel(base_ns=50_000.0, per_copy_ns=3_000.0, per_byte_ns=1 / 2.4e3)  # 2.4 TB/s
    points = [(*config, truth.expected_ns(*config)) for config in (small, many, large) for _ in range(5)]
    points.append((*small, 900_000.0))  # one slow sample: the medians do not move
    model = ClockCalibration.fit([300_000.0] * 16, points).writes
    assert model.base_ns == pytest.approx(50_000.0) and model.per_copy_ns == pytest.approx(3_000.0)
    assert model.per_byte_ns == pytest.approx(1 / 2.4e3)
    # behind the gate the copies run one after another: their parts add up
    assert model.expected_ns(50 * (64 << 20), 50) == pytest.approx(50_000.0 + 150_000.0 + 50 * (64 << 20) / 2.4e3)


def test_the_fixed_cost_of_each_null_sample_configuration_is_kept_beside_the_whole_median():
    writes = [(4096, 1, 50_000.0)] * 3 + [(1 << 29, 1, 300_000.0)] * 3 + [(65_536, 16, 90_000.0)] * 3
    windows = [293_000.0, 293_500.0, 294_000.0, 295_000.0, 295_500.0, 296_000.0, 293_000.0, 292_500.0, 293_500.0]
    calibration = ClockCalibration.fit(windows, writes)
    assert calibration.fixed_ns == 293_500.0
    assert calibration.fixed_by_configuration == ((4096, 1, 293_500.0), (65_536, 16, 293_000.0),
                                                  (1 << 29, 1, 295_500.0))
    assert ClockCalibration.fit(windows).fixed_by_configuration == ()


def test_a_calibration_without_a_writes_model_is_unusable():
    assert "could not fit how long its writes take" in CALIBRATION.unusable()
    assert MODELLED.unusable() == ""


def test_no_writes_model_where_the_null_samples_do_not_determine_one():
    assert WritesModel.fit([(100, 1, 5.0), (10**9, 1, 600.0)]) is None  # no configuration of many copies
    assert WritesModel.fit([(100, 1, 5.0), (100, 16, 60.0), (200, 16, 600.0)]) is None  # one one-copy size
    assert WritesModel.fit([(100, 1, 50.0), (200, 16, 20.0), (10**9, 1, 600.0)]) is None  # a negative part
    assert ClockCalibration.fit([300_000.0]).writes is None


MODELLED = ClockCalibration(fixed_ns=300_000.0, spread_ns=600.0, samples=24,
                            writes=WritesModel(base_ns=50_000.0, per_copy_ns=10_000.0, per_byte_ns=0.0))


def written(calls_us: float, writes_us: float) -> ClockReading:
    """A 50-call sample whose writes the model expects to take 550 µs."""
    return ClockReading(window_ns=300_000.0 + calls_us * 1e3, writes_ns=writes_us * 1e3, bytes=50 << 20, copies=50)


def test_writes_within_the_models_tolerance_are_not_interrupted():
    judge = ClockJudge(MODELLED, calls=50)
    judge.judge(written(1000.0, 560.0), 999_000.0, None)
    kept = judge.judge(written(1000.0, 550.0 + INTERRUPTED_NS / 1e3 - 1.0), 999_000.0, None)
    assert not kept.discarded and kept.per_call_ns == 20_000.0
    assert judge.summary()["interrupted"] == 0 and judge.summary()["charged_ns"] == 0.0


def test_a_turn_inside_every_samples_writes_is_charged_to_the_sample():
    """A worker whose context computes 1.8 ms of a sample's 2 ms of work inside the evaluator's writes of every sample
    (tests/redteam/write_gaps.py): each sample's writes run 2.1 ms over the model (the work and two hand-overs), alike,
    so none is slower than the job's quickest; each window holds 200 µs of calls."""
    judge, tally = ClockJudge(MODELLED, calls=50), Tally()
    for _ in range(40):
        judgement = judge.judge(written(200.0, 550.0 + 2_100.0), 199_000.0, None)
        tally.add(judgement, 1.0, 0.0, False, 1e6)
    summary = judge.summary()
    assert summary["preempted"] == 0  # the job's quickest writes are the worker's to set
    assert summary["interrupted"] == 39 and summary["discarded"] == 9  # a quarter at most; the first not counted
    assert summary["charged_ns"] == pytest.approx(30 * 2_100_000.0)
    # every kept sample carries its overrun, every discarded one counts as at least the slowest of those: no gain
    assert tally.durations == [pytest.approx((200_000.0 + 2_100_000.0) / 50)] * 39  # the first judged one too


def test_without_a_writes_model_the_turn_is_judged_against_the_jobs_quickest_alone():
    judge = ClockJudge(CALIBRATION, calls=50)
    judgements = [judge.judge(written(200.0, 2_650.0), 199_000.0, None) for _ in range(5)]
    assert judgements[-1].per_call_ns == 4_000.0 and judge.summary()["interrupted"] == 0


def test_a_slow_hand_over_is_not_kept_as_its_own_while_such_samples_are_a_quarter_at_most():
    judge = ClockJudge(CALIBRATION, calls=1)  # spread 600 ns: a hand-over is slow from 10 µs over the worker's events
    judge.judge(reading(20.0), 19_000.0, None)
    assert not judge.judge(reading(28.0), 19_000.0, None).discarded  # 9 µs over: not slow
    assert judge.judge(reading(60.0), 19_000.0, None).discarded  # 41 µs the worker's events do not hold
    verdicts = [judge.judge(reading(60.0), 19_000.0, None).discarded for _ in range(6)]
    # one sample in four may be discarded: from 3 to 7 judged samples one, at 8 a second
    assert verdicts == [False, False, False, False, False, True]
    summary = judge.summary()
    assert summary["slow_handovers"] == 7 and summary["discarded"] == 2


def test_the_first_judged_sample_is_kept_at_its_clocks_time_however_it_looks():
    """A worker that under-reports its first judged sample (a slow hand-over to the judge) cannot have it dropped:
    with nothing kept before it, a discarded sample would count for nothing."""
    judge, tally = ClockJudge(CALIBRATION, calls=1), Tally()
    judge.judge(reading(20.0), 19_000.0, None)  # the warm-up
    first = judge.judge(reading(90.0), 1_000.0, None)
    assert not first.discarded and first.per_call_ns == 90_000.0 and judge.summary()["slow_handovers"] == 1
    assert tally.add(first, 1.0, 0.0, False, 100.0) and tally.durations == [90_000.0]


def test_a_discarded_sample_counts_as_at_least_the_slowest_kept():
    tally = Tally()
    assert not tally.add(Judgement(per_call_ns=5.0, discarded=True), 1.0, 0.0, False, 100.0)  # nothing kept yet
    assert tally.add(Judgement(per_call_ns=20.0, worker_per_call_ns=19.0), 1.0, 0.0, False, 100.0)
    assert tally.add(Judgement(per_call_ns=30.0, worker_per_call_ns=29.0), 1.0, 0.0, True, 100.0)
    assert tally.add(Judgement(per_call_ns=5.0, worker_per_call_ns=4.0, discarded=True), 1.0, 0.0, False, 100.0)
    assert tally.durations == [20.0, 30.0, 30.0] and tally.worker_ns == [19.0, 29.0, 4.0]
    assert tally.queued_late == 1 and tally.discarded_ns == 200.0
    assert tally.worker_stats()["mean"] == pytest.approx(52.0 / 3)


def test_the_stopping_rule_runs_on_the_kept_samples_and_waits_for_the_judge():
    class Unsettled:
        def settled(self):
            return False
    tally = Tally(durations=[10.0] * 5)
    rule = StopRule(max_runs=5)
    assert tally.finished(rule, 1e9, ClockJudge(CALIBRATION, 1))
    assert not tally.finished(rule, 1e9, Unsettled())
    assert not Tally(durations=[10.0] * 4).finished(rule, 50e6, ClockJudge(CALIBRATION, 1))  # under 100 ms


def test_the_witness_judge_keeps_the_workers_time_and_discards_a_flagged_sample():
    witness = Witness(Calibration([1000.0, 1000.0, 1000.0]), "cuda")  # no spread: a margin of 100 µs
    judge = WitnessJudge(witness, calls=10)
    assert judge.judge(1e6, 0.0, 500_000.0, 0.0, 0.0) == Judgement()  # the first: warm-up
    kept = judge.judge(501_000.0, 0.0, 500_000.0, 0.0, 0.0)
    assert kept.per_call_ns == 50_000.0 and not kept.discarded
    flagged = judge.judge(801_000.0, 0.0, 500_000.0, 0.0, 0.0)  # 300 µs the report does not explain
    assert flagged.discarded and flagged.verdict == ""
    assert "inside a sample" in judge.judge(100.0, 0.0, 500_000.0, 0.0, 0.0).verdict
