"""The GPU's state around every sample (harness.evaluator.telemetry), on a stand-in for NVML: a sample whose
throttle reasons say the GPU slowed down, or whose power or thermal violation counter advanced, is flagged;
idle and application-clock reasons are not throttling."""
from types import SimpleNamespace

import pytest
import torch

from harness.evaluator.telemetry import Telemetry


class FakeNvml:
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    class NVMLError(Exception):
        pass

    def __init__(self):
        self.sm, self.reasons, self.violation = 1980, 0x1, {0: 0, 1: 0}

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self.sm if kind == self.NVML_CLOCK_SM else 2619

    def nvmlDeviceGetPowerUsage(self, handle):
        return 350_000  # mW

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 50

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return self.reasons

    def nvmlDeviceGetViolationStatus(self, handle, policy):
        return SimpleNamespace(violationTime=self.violation[policy])


def sample(telemetry, nvml, *, sm=1980, reasons=0x1, power_violation_ns=0):
    nvml.sm, nvml.reasons = sm, reasons
    nvml.violation[0] += power_violation_ns
    return telemetry.read()


def test_throttled_samples_are_flagged_with_their_reasons():
    nvml = FakeNvml()
    telemetry = Telemetry(nvml, handle=None)
    assert sample(telemetry, nvml).reasons == []  # idle is not throttling
    assert sample(telemetry, nvml, reasons=0x2).reasons == []  # nor application clocks
    assert sample(telemetry, nvml, sm=1500, reasons=0x4).reasons == ["power cap"]
    assert sample(telemetry, nvml, power_violation_ns=1000).reasons == ["power"]
    summary = telemetry.summary()
    assert summary["samples"] == 4 and summary["throttled_samples"] == [3, 4]
    assert summary["throttle_reasons"] == ["power", "power cap"]
    assert summary["sm_mhz"] == [1500, 1980, 1980] and summary["power_w"] == [350.0] * 3


def test_a_new_job_starts_with_no_readings_and_counts_violations_from_its_start():
    nvml = FakeNvml()
    telemetry = Telemetry(nvml, handle=None)
    sample(telemetry, nvml)
    nvml.violation[0] += 500  # between jobs: no sample's
    telemetry.restart()
    assert telemetry.summary() is None
    assert sample(telemetry, nvml).reasons == []
    assert sample(telemetry, nvml, power_violation_ns=1).reasons == ["power"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without a GPU")
def test_no_gpu_no_telemetry():
    assert Telemetry.open() is None
