"""The GPU's state around every timed sample, read by the evaluator through NVML (nvidia-ml-py): SM and memory
clocks, power, temperature, and whether the GPU slowed itself down (a power cap, thermal or hardware slowdown:
NVML's throttle reasons at the sample's end, or its power and thermal violation counters advancing since the
last sample's end, or the job's timed loop's start: the sample and the evaluator's draws before it). As nvbench
does, a sample taken while the GPU throttled is flagged; records carry the summary.

The reads happen after a sample, outside the witness's clock: one violation counter read takes about 1 ms on an
H100 (a driver call), so each is read once a sample, not before and after it. Where there is no GPU or no NVML,
there is no telemetry (None), and records say nothing about throttling.
"""
import os
import statistics
from dataclasses import dataclass, field

THROTTLE_REASONS = {  # NVML clock-event reason bits that slow the GPU down (idle, application clocks, sync boost
    0x04: "power cap",  # and display clocks do not)
    0x08: "hardware slowdown",
    0x20: "thermal",
    0x40: "hardware thermal",
    0x80: "power brake",
}
VIOLATION_POLICIES = {"power": 0, "thermal": 1}  # NVML_PERF_POLICY_POWER, NVML_PERF_POLICY_THERMAL


@dataclass
class Reading:
    """One read after a sample."""

    sm_mhz: float
    mem_mhz: float
    power_w: float
    temp_c: float
    reasons: list  # throttle reasons active at the end of the sample, or whose violation counter advanced


@dataclass
class Telemetry:
    nvml: object  # the pynvml module
    handle: object
    readings: list = field(default_factory=list)
    counted: dict = field(default_factory=dict)  # the violation counters at the last read (or restart)

    @classmethod
    def open(cls) -> "Telemetry | None":
        """NVML on the GPU this process's CUDA device 0 is, or None."""
        try:
            import pynvml
            import torch
            pynvml.nvmlInit()
            uuid = str(torch.cuda.get_device_properties(0).uuid)
            try:
                handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
            except pynvml.NVMLError:
                visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
                handle = pynvml.nvmlDeviceGetHandleByIndex(int(visible) if visible.isdigit() else 0)
            return cls(pynvml, handle)
        except Exception:  # noqa: BLE001 - no NVML, no driver support, no GPU: no telemetry
            return None

    def counters(self) -> dict:
        """Violation time so far per policy (ns), where the driver keeps it."""
        out = {}
        for name, policy in VIOLATION_POLICIES.items():
            try:
                out[name] = self.nvml.nvmlDeviceGetViolationStatus(self.handle, policy).violationTime
            except self.nvml.NVMLError:
                continue
        return out

    def read(self) -> Reading:
        """The state after a sample."""
        nvml, h = self.nvml, self.handle
        reasons = {name for bit, name in THROTTLE_REASONS.items() if self._reasons() & bit}
        before, after = self.counted, self.counters()
        self.counted = after
        reasons |= {name for name in after if name in before and after[name] > before[name]}
        reading = Reading(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM),
                          nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM),
                          nvml.nvmlDeviceGetPowerUsage(h) / 1e3,
                          nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU), sorted(reasons))
        self.readings.append(reading)
        return reading

    def _reasons(self) -> int:
        nvml = self.nvml
        ask = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) \
            or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        try:
            return ask(self.handle)
        except nvml.NVMLError:
            return 0

    def summary(self) -> dict | None:
        """(min, median, max) of each quantity over the job's samples, the numbers of the samples taken while the
        GPU throttled (1 = the first timed sample), and the reasons seen; None before any reading."""
        if not self.readings:
            return None

        def spread(values):
            return [min(values), statistics.median(values), max(values)]
        rs = self.readings
        return {"samples": len(rs), "sm_mhz": spread([r.sm_mhz for r in rs]),
                "mem_mhz": spread([r.mem_mhz for r in rs]), "power_w": spread([r.power_w for r in rs]),
                "temp_c": spread([r.temp_c for r in rs]),
                "throttled_samples": [n for n, r in enumerate(rs, 1) if r.reasons],
                "throttle_reasons": sorted({reason for r in rs for reason in r.reasons})}

    def restart(self):
        """A new job's timed loop: the readings so far belong to the last one, and the counters count from now."""
        self.readings = []
        self.counted = self.counters()
