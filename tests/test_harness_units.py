"""Stats, the stopping rule, POPCORN headers, SOL and the results file."""
import importlib
import json
import math
import os
import sys
from pathlib import Path

import pytest

from harness import results, sol
from harness.rules import StopRule
from harness.stats import calculate, geomean
from harness.submission import SubmissionError, import_submission, popcorn_headers, resolve, task_from_leaderboard
from reference import get_task
from reference.cases import cases, leaderboards

BOARDS = leaderboards()
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def script(name: str):
    """A module of scripts/, which is a folder of programs, not a package."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module(name)


def test_stats_match_contest_definitions():
    s = calculate([10.0, 12.0, 14.0, 16.0])
    assert s.runs == 4 and s.mean == 13.0 and s.best == 10.0 and s.worst == 16.0 and s.median == 13.0
    assert math.isclose(s.std, math.sqrt(20 / 3)) and math.isclose(s.err, s.std / 2)


def test_stop_rule():
    rule = StopRule()
    steady = [100.0] * 3
    assert not rule.done(steady[:2], 1e9)  # fewer than 3 samples
    assert not rule.done(steady, 50e6)  # under 100 ms
    assert rule.done(steady, 200e6)  # zero error
    noisy = [100.0, 200.0, 50.0, 300.0]
    assert not rule.done(noisy, 200e6)
    assert rule.done(noisy, 121e9)  # wall cap
    assert StopRule(max_time_ns=500).done(noisy, 200e6)  # summed means past the cap
    assert rule.done([1.0 + i % 2 for i in range(200)], 0)  # max runs
    assert math.isclose(geomean([1, 100]), 10)


def test_popcorn_headers_and_leaderboard_names():
    text = "#!POPCORN leaderboard nvfp4_group_gemm\n#!POPCORN gpu B200\nimport torch\n"
    assert popcorn_headers(text) == {"leaderboard": "nvfp4_group_gemm", "gpu": "B200"}
    assert task_from_leaderboard("nvfp4-dual-gemm", BOARDS) == "dual_gemm"
    assert task_from_leaderboard("nvfp4_gemv", BOARDS) == "gemv"
    assert task_from_leaderboard("amd-fp8-mm", BOARDS) is None


def test_resolve_versions_and_paths(tmp_path):
    sub = resolve("v0", "gemm", BOARDS)
    assert sub.task == "gemm" and sub.version == "v0" and sub.path.name == "v0.py"
    f = tmp_path / "mine.py"
    f.write_text("#!POPCORN leaderboard nvfp4_gemv\ndef custom_kernel(d):\n    return d[-1]\n")
    assert resolve(str(f), None, BOARDS).task == "gemv"
    with pytest.raises(SubmissionError, match="task gemv"):
        resolve(str(f), "gemm", BOARDS)
    f.write_text("#!POPCORN leaderboard nvfp4_nope\n")
    with pytest.raises(SubmissionError, match="none of"):
        resolve(str(f), None, BOARDS)


def test_files_named_like_versions_stay_out_of_the_lineage(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "v7.py").write_text("def custom_kernel(d):\n    return d[-1]\n")
    sub = resolve(str(mine / "v7.py"), "gemv", BOARDS)
    assert sub.version == "mine-v7" and sub.task == "gemv"  # not the lineage's own v7, and a safe file name
    lineage_file = resolve("submissions/gemm/v10.py", None, BOARDS)
    assert lineage_file.task == "gemm" and lineage_file.version == "v10"  # task from the lineage folder
    with pytest.raises(SubmissionError, match="v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10"):
        resolve("v99", "gemm", BOARDS)  # versions in number order
    with pytest.raises(SubmissionError) as missing:
        resolve(str(tmp_path / "nope.py"), "gemm", BOARDS)
    assert "Versions there" not in str(missing.value)  # a path, not a version name: no lineage listing


def test_gpu_only_files_on_a_cpu_say_they_need_a_gpu(monkeypatch):
    import torch

    from harness.protocol import brief
    from harness.worker.explain import explain
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for exc in (ModuleNotFoundError("No module named 'triton'", name="triton"),
                ModuleNotFoundError("No module named 'cutlass.cute'", name="cutlass.cute"),
                OSError("CUDA_HOME environment variable is not set. Please set it to your CUDA install root.")):
        assert brief(explain(exc, [])).startswith("this file needs a CUDA GPU")
    other = brief(explain(ModuleNotFoundError("No module named 'numpyy'", name="numpyy"), []))
    assert other.startswith("ModuleNotFoundError") and "Traceback" not in other


def test_an_exception_text_holding_the_traceback_mark_hides_nothing():
    from harness.protocol import brief
    from harness.worker.explain import explain
    here = Path(__file__)
    try:
        raise RuntimeError("bad\n--- traceback ---\nhidden")
    except RuntimeError as exc:
        told = brief(explain(exc, [here]))
    assert "hidden" in told and f"(at {here.name}:" in told


def test_sol_matches_issue_targets_on_h200():
    h200 = sol.peak_for("NVIDIA H200")
    expected_us = {"gemv": [13.8, 27.6, 6.9], "gemm": [30.4, 7.6, 3.8], "dual_gemm": [30.4, 60.8, 13.0, 45.6],
                   "group_gemm": [60.8, 30.4, 13.0, 6.5]}
    for task, targets in expected_us.items():
        mod = get_task(task)
        got = [sol.sol_ns(task, mod.flops(**c.args), mod.bytes_moved(**c.args), h200) / 1e3
               for c in cases(task, "benchmarks")]
        assert all(abs(g - t) <= 0.06 for g, t in zip(got, targets)), (task, got)  # issue figures are rounded
    assert sol.peak_for("NVIDIA H100 80GB HBM3").name == "H100 SXM"
    assert sol.peak_for("NVIDIA GeForce RTX 4090").name == "RTX 4090"
    assert sol.peak_for("cpu") is None


def test_results_append_is_whole_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    for i in range(3):
        results.append(path, {"run_id": "r", "version": "v0", "mode": "test", "status": "pass", "i": i,
                              "text": "line\nbreak"})
    with open(path, "a") as f:
        f.write('{"torn": ')  # a writer that died mid-line
    assert [r["i"] for r in results.read(path)] == [0, 1, 2]
    assert json.loads(path.read_text().splitlines()[1])["text"] == "line\nbreak"


def test_git_state_prefers_the_commit_the_caller_names(monkeypatch):
    """A device copy may hold a stale .git: the commit named by the caller must win over its HEAD."""
    monkeypatch.setenv("NVFP4_ARENA_COMMIT", "0" * 40)
    monkeypatch.setenv("NVFP4_ARENA_DIRTY", "1")
    results.git_state.cache_clear()
    assert results.git_state() == {"commit": "0" * 40, "dirty": True}
    monkeypatch.delenv("NVFP4_ARENA_COMMIT")
    results.git_state.cache_clear()
    assert results.git_state()["commit"] != "0" * 40
    results.git_state.cache_clear()


def test_tables_print_user_text_literally():
    from rich.console import Console

    from harness.views import report
    from harness.evaluator.session import RunSummary
    sub = resolve("v0", "gemm", BOARDS)
    message = "ValueError: shape [m, k] mismatch: [bold]got[/bold] [1, 2]"
    rec = {"index": 0, "shape": "m=[8,16] n=64", "values": "contest", "status": "fail", "message": message,
           "kind": "tests", "first_call_ns": None}
    console = Console(record=True, width=400)
    report.render(RunSummary(sub, "test", "smoke", records=[rec]), console)
    text = console.export_text()
    assert "m=[8,16]" in text and text.count("[bold]got[/bold] [1, 2]") == 2  # the table's detail and the paragraph


def test_predecoded_baseline_computes_the_task():
    pb = script("predecoded_baseline")
    for task in pb.TASKS:
        for case in cases(task, "smoke"):
            data = get_task(task).generate_input(**case.args)
            operands, call, _ = pb.prepare(task, data)
            exact = task != "dual_gemm"  # its silu * mul runs on the fp16 halves, as a user's would
            assert pb.max_abs_diff(task, call(operands), get_task(task).ref_kernel(data)) <= (0.0 if exact else 0.5)


def test_contest_timing_says_what_it_does_not_watch():
    from rich.console import Console

    from harness.views import report
    from harness.evaluator.session import RunSummary
    sub = resolve("v0", "gemm", BOARDS)
    for timing, device, shown in (("contest", "NVIDIA H100 80GB HBM3", True), ("arena", "NVIDIA H100 80GB HBM3", False),
                                  ("contest", "cpu", False)):
        console = Console(record=True, width=400)
        report.host_notes(RunSummary(sub, "benchmark", "contest", timing, device={"name": device}), console)
        assert ("side stream" in console.export_text()) == shown


def test_kernel_debug_shows_where_an_output_goes_wrong(tmp_path):
    from click.testing import CliRunner
    kernel_debug = script("kernel_debug")
    wrong = tmp_path / "corner.py"  # right except its first 64 x 64 block
    wrong.write_text("from reference.gemm import ref_kernel\n\n"
                     "def custom_kernel(data):\n"
                     "    c = data[-1]\n"
                     "    c[...] = ref_kernel(data)\n"
                     "    c[:64, :64] = float('nan')\n"
                     "    return c\n")
    out = CliRunner().invoke(kernel_debug.main, ["--task", "gemm", "--submission", str(wrong), "--case", "smoke:0"])
    assert out.exit_code == 0, out.output
    assert "rows      0: 1.00 0.00" in out.output and "rows     64: 0.00 0.00" in out.output
    assert "4096 NaN" in out.output


def test_kernel_debug_shows_each_group_of_a_list_output(tmp_path):
    from click.testing import CliRunner
    kernel_debug = script("kernel_debug")
    wrong = tmp_path / "group_corner.py"  # right except the first 16 x 16 block of group 1
    wrong.write_text("from reference.group_gemm import ref_kernel\n\n"
                     "def custom_kernel(data):\n"
                     "    out = ref_kernel(data)\n"
                     "    out[1][:16, :16] = float('nan')\n"
                     "    return out\n")
    out = CliRunner().invoke(kernel_debug.main, ["--task", "group_gemm", "--submission", str(wrong), "--case",
                                                 "smoke:0", "--block", "16"])
    assert out.exit_code == 0, out.output
    groups = out.output.split("group 1:")
    assert len(groups) == 2 and "group 0: about 0.0% of elements wrong, 0 NaN" in groups[0]
    assert "256 NaN" in groups[1] and "rows      0: 1.00 0.00" in groups[1] and "rows     16: 0.00 0.00" in groups[1]


def test_compile_check_finds_a_fragment_written_while_its_wgmma_may_run():
    """The SASS check flags a write to a register that an unretired wgmma reads as its A fragment, and nothing once
    the wait that retires that wgmma's group has come (the E2 build of group_gemm v29 had 41 such writes)."""
    compile_check = script("compile_check")

    def sass(*instructions):
        return "\n".join(f"        /*{16 * i:04x}*/                   {ins} ;" for i, ins in enumerate(instructions))

    first = "HGMMA.64x128x16.F32 R24, R88, gdesc[UR16], R24, gsb0"
    second = "HGMMA.64x128x16.F32 R24, R104, gdesc[UR16], R24, gsb0"
    # Both groups in flight; a wait that keeps one leaves the newer group's registers (R104-R107) busy.
    assert compile_check.fragment_hazards(sass(first, second, "WARPGROUP.DEPBAR.LE gsb0, 0x1",
                                               "IMAD.SHL.U32 R90, R9, 0x20, RZ")) == []
    assert compile_check.fragment_hazards(sass(first, second, "WARPGROUP.DEPBAR.LE gsb0, 0x1",
                                               "LOP3.LUT R105, R9, 0xe000e00, RZ, 0xc0, !PT")) == \
        ["0030: LOP3.LUT R105, R9, 0xe000e00, RZ, 0xc0, !PT"]
    # Before any wait, a 64-bit load into R90-R91 overlaps the first fragment; after the full wait nothing does.
    assert len(compile_check.fragment_hazards(sass(first, "LD.E.64 R90, desc[UR4][R2.64]"))) == 1
    assert compile_check.fragment_hazards(sass(first, "WARPGROUP.DEPBAR.LE gsb0, 0x0",
                                               "LD.E.64 R90, desc[UR4][R2.64]")) == []
    # Stores read their first register: not a write.
    assert compile_check.fragment_hazards(sass(first, "STS [R2], R88")) == []
    # A 128-bit load into R86-R89 and a shuffle behind its predicate output reach the fragment R88-R91.
    assert len(compile_check.fragment_hazards(sass(first, "LDS.128 R86, [R2]"))) == 1
    assert len(compile_check.fragment_hazards(sass(first, "SHFL.IDX PT, R89, R3, RZ, 0x1f"))) == 1
    # Writing a running wgmma's accumulators (R24-R87 for 64x128 in f32) is a hazard too.
    assert len(compile_check.fragment_hazards(sass(first, "MOV R30, RZ"))) == 1
    # A loop whose second block's group runs on past the branch back: the write at the top meets it next time round.
    loop = sass("LOP3.LUT R104, R9, 0xe000e00, RZ, 0xc0, !PT", first, "WARPGROUP.DEPBAR.LE gsb0, 0x1", second,
                "WARPGROUP.DEPBAR.LE gsb0, 0x1", "@!P0 BRA 0x0")
    assert compile_check.fragment_hazards(loop) == ["0000: LOP3.LUT R104, R9, 0xe000e00, RZ, 0xc0, !PT"]


def test_compile_check_finds_the_hazard_of_a_real_build():
    """An excerpt of the SASS of the build that computed wrong results (group_gemm v29 drafted for one height, tree
    073d8db): block 1's decode writes R88-R103 while block 0's wgmmas read them."""
    compile_check = script("compile_check")
    excerpt = (Path(__file__).resolve().parent / "sass" / "group_gemm_v29_one_height_073d8db.sass").read_text()
    found = compile_check.fragment_hazards(excerpt)
    assert found and all(int(line.split(",")[0].split()[-1][1:]) in range(88, 104) for line in found)


def test_the_best_wgmma_kernels_build_without_a_fragment_hazard():
    """The current bests, built as for Hopper: no serialized wgmma, no spill, no register written under a running
    wgmma (needs nvcc and a cuobjdump, as Triton's package carries; skipped without them)."""
    import shutil
    import subprocess
    compile_check = script("compile_check")
    if shutil.which("nvcc") is None or compile_check.find_cuobjdump() is None:
        pytest.skip("needs nvcc and cuobjdump")
    for task, version in (("gemm", "v20"), ("dual_gemm", "v19"), ("group_gemm", "v29")):
        done = subprocess.run([sys.executable, str(SCRIPTS / "compile_check.py"), task, version],
                              capture_output=True, text=True, cwd=SCRIPTS.parent)
        assert done.returncode == 0 and "fragment hazards: 0 " in done.stdout, (task, version, done.stdout)


def test_gemv_floor_probes_keep_v11_loads_and_drop_its_decode(tmp_path):
    probe = script("gemv_floor_probe")
    nodec, stream = probe.write_probes(tmp_path)
    v11 = probe.V11.read_text()
    nodec_text = nodec.read_text()
    assert "block_idot(x[u][r]" in v11 and "block_idot(x[u][r]" not in nodec_text
    assert nodec_text.count("ld_stream(arow[r] + ch * 16)") == v11.count("ld_stream(arow[r] + ch * 16)") == 1
    assert "nvfp4_gemv_v11" not in nodec_text and "ld.global.nc" in stream.read_text()
    for path in (nodec, stream):
        assert callable(import_submission(path).custom_kernel)


def test_cpu_times_are_said_to_rank_nothing():
    from rich.console import Console

    from harness.views import report
    from harness.evaluator.session import RunSummary
    sub = resolve("v0", "gemm", BOARDS)
    for device, shown in (("cpu", True), ("NVIDIA H100 80GB HBM3", False)):
        console = Console(record=True, width=400)
        summary = RunSummary(sub, "benchmark", "smoke", "arena", device={"name": device},
                             records=[{"index": 0, "stats": {"mean": 1.0}}])
        report.host_notes(summary, console)
        assert ("not comparable across machines" in console.export_text()) == shown


def test_a_throttled_sample_is_flagged_beside_the_number_and_explained():
    from rich.console import Console

    from harness.views import report
    from harness.evaluator.session import RunSummary
    sub = resolve("v0", "gemm", BOARDS)
    telemetry = {"samples": 10, "sm_mhz": [1410.0, 1980.0, 1980.0], "mem_mhz": [2619] * 3, "power_w": [690.0] * 3,
                 "temp_c": [70.0] * 3, "throttled_samples": [4, 7], "throttle_reasons": ["power cap"]}
    shown = {}
    for name, record_telemetry in (("throttled", telemetry), ("steady", {**telemetry, "throttled_samples": []})):
        record = {"index": 0, "shape": "m=1", "status": "pass", "stats": {"mean": 1000.0}, "telemetry": record_telemetry}
        summary = RunSummary(sub, "benchmark", "contest", "arena", device={"name": "NVIDIA H100 80GB HBM3"},
                             records=[record])
        console = Console(record=True, width=400)
        console.print(report.benchmark_table(summary))
        report.host_notes(summary, console)
        shown[name] = console.export_text()
    assert "throttled" in shown["throttled"] and "2 of 10 samples" in shown["throttled"]
    assert "power cap" in shown["throttled"] and "throttled" not in shown["steady"]


def test_the_worker_self_check_reports_a_replaced_device_method_or_one_shadowed_on_the_instance():
    """A file that replaces a method of the worker's device class (GpuDevice.signal_done, to say "done" early) or
    shadows one on the worker's device object is reported; the check's own snapshot of the classes is what it
    compares against."""
    from harness import device as devices
    from harness.worker.sample import SelfCheck
    device = devices.HostDevice()
    check = SelfCheck([devices], device, (device,))
    assert check.findings() == []
    original = devices.HostDevice.synchronize
    try:
        devices.HostDevice.synchronize = lambda self: None
        assert check.findings() == ["worker functions replaced: harness.device.HostDevice.synchronize"]
    finally:
        devices.HostDevice.synchronize = original
    assert check.findings() == []
    device.start = lambda: None
    assert check.findings() == ["worker functions replaced: HostDevice.start"]


def test_the_worker_self_check_reports_a_changed_persisting_l2_limit():
    """The limit belongs to the worker's CUDA context, which only the worker can read: its self-check compares it
    with the limit before the submission was imported."""
    from harness.worker.sample import SelfCheck

    class Device:
        limit = 0

        def persisting_l2_limit(self):
            return self.limit

    device = Device()
    check = SelfCheck([], device)
    assert check.findings() == []
    device.limit = 32 << 20
    assert check.findings() == [f"the persisting-L2 cache limit changed (0 -> {32 << 20} bytes)"]


def test_a_worker_folder_that_refuses_removal_does_not_end_the_run():
    """What a worker leaves in its folder may refuse removal (here: an immutable file, which only a worker with
    capabilities could set); stopping the worker then leaves the folder instead of raising between jobs."""
    import array
    import fcntl
    from harness.evaluator.sandbox import worker_environment
    _, _, scratch = worker_environment([])
    pinned = os.path.join(scratch.name, "pinned")
    open(pinned, "w").close()
    fd = os.open(pinned, os.O_RDONLY)
    flags = array.array("l", [0])
    try:
        fcntl.ioctl(fd, 0x80086601, flags, True)  # FS_IOC_GETFLAGS
        flags[0] |= 0x10  # FS_IMMUTABLE_FL
        fcntl.ioctl(fd, 0x40086602, flags, True)  # FS_IOC_SETFLAGS
    except OSError:
        os.close(fd)
        scratch.cleanup()
        pytest.skip("needs CAP_LINUX_IMMUTABLE and a file system with inode flags")
    try:
        scratch.cleanup()
        assert os.path.exists(pinned)
    finally:
        flags[0] &= ~0x10
        fcntl.ioctl(fd, 0x40086602, flags, True)
        os.close(fd)
        scratch.cleanup()
    assert not os.path.exists(scratch.name)


def test_a_submission_imported_from_sent_content_is_that_content_to_inspect_too(tmp_path):
    """The worker imports the content the evaluator hashed; Triton and the CuTe DSL read a kernel's source through
    inspect, so that must give the same content, not what the path holds by now."""
    import inspect
    path = tmp_path / "k.py"
    path.write_text("def custom_kernel(data):\n    return 'on disk'\n")
    module = import_submission(path, "def custom_kernel(data):\n    return 'sent'\n")
    assert module.custom_kernel(None) == "sent"
    assert "'sent'" in inspect.getsource(module.custom_kernel) and module.__file__ == str(path)


def test_a_line_nested_past_pythons_limit_is_garbled_not_an_exception():
    import os
    import time

    from harness import channel
    read, write = os.pipe()
    os.write(write, b"[" * 20000 + b"]" * 20000 + b"\n")  # within a pipe's buffer, deeper than the limit
    with pytest.raises(channel.Garbled):
        channel.Reader(read).receive(time.monotonic() + 5)
    os.close(read)
    os.close(write)


def test_every_message_the_harness_sends_is_one_the_channel_takes():
    """A kind missing from channel.KINDS makes the receiving side take the message for garbage (the worker leaves,
    the evaluator says tampered): every literal kind sent in harness/ must be known."""
    import re

    from harness.channel import KINDS
    sent = set()
    for path in (Path(__file__).resolve().parent.parent / "harness").rglob("*.py"):
        sent |= set(re.findall(r'send\((?:[\w.\[\]]+,\s*)?"([a-z_]+)"', path.read_text()))
    assert {"arm", "clock", "ready", "sampled"} <= sent  # the pattern finds both sides' sends
    assert sent - set(KINDS) == set()
