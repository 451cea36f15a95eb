"""The sweep's Ray backend: one Ray task per job, each asking for one GPU (`num_gpus=1`; Ray sets
its CUDA_VISIBLE_DEVICES), that runs the same run.py process as a local lane on whichever host Ray
picks and returns the judged attempt to the driver, which alone writes results/. Ray schedules and
places the tasks; a lost attempt is submitted again (MAX_ATTEMPTS in all), a task that Ray itself
could not finish (its worker or node died) counts as lost.

Every host runs the repository found at this same path, with the Python environment Ray's workers
run in (torch and the requirements installed there).
"""
import os
import re
import socket

from ..paths import ROOT
from .lanes import MAX_ATTEMPTS, LANE_ENV, Attempt, Finished, Options, Started, SweepError, SweepJob, run_attempt

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def import_ray():
    try:
        import ray
    except ImportError:
        raise SweepError("--ray needs Ray: pip install -e .[ray] (or pip install ray).") from None
    return ray


def connect(address: str):
    """Join the cluster at `address` ('auto': the one this host is part of; 'local': a new one on
    this machine), unless this process already did (tests start their own)."""
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=None if address == "local" else address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise SweepError(f"--ray {address}: cannot reach a Ray cluster there ({exc}).") from None
    return ray


def attempt_on_worker(job: SweepJob, options: Options) -> Attempt:
    """The body of a Ray task: the job on the GPU Ray gave this task."""
    import ray
    gpus = ",".join(str(g) for g in ray.get_gpu_ids())
    lane = f"{socket.gethostname()}:gpu{gpus}"
    return run_attempt(job, lane, {LANE_ENV: lane}, options)


def ray_events(jobs: list[SweepJob], address: str, options: Options):
    """Join the cluster (SweepError if it has no GPU); the events of its jobs, as Ray tasks end."""
    ray = connect(address)
    if not ray.cluster_resources().get("GPU"):
        raise SweepError(f"--ray {address}: the Ray cluster has no GPU, and each job asks for one.")
    # Workers import harness from this same path (Ray does not pass the driver's sys.path on).
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    task = ray.remote(num_gpus=1, max_retries=0, runtime_env={"env_vars": {"PYTHONPATH": path}})(attempt_on_worker)
    return _events(ray, task, jobs, options)


def _events(ray, task, jobs: list[SweepJob], options: Options):
    """Submit every job, resubmit lost ones, and yield the sweep's events as tasks end."""
    pending = {}

    def submit(job: SweepJob):
        job.attempts += 1
        pending[task.remote(job, options)] = job
        return Started(slot(job), job)

    for job in jobs:
        yield submit(job)
    try:
        while pending:
            [ref], _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ref)
            try:
                attempt = ray.get(ref)
                attempt.job = job  # the driver's own copy, which counts the tries
            except ray.exceptions.RayError as exc:
                said = [line for line in ANSI.sub("", str(exc)).splitlines() if line.strip()]
                attempt = Attempt(job, "ray", "lost", number=job.attempts,
                                  message=f"the Ray task failed: {said[-1].strip() if said else type(exc).__name__}")
            if attempt.lost and job.attempts < MAX_ATTEMPTS:
                attempt.final = False
                yield Finished(attempt, slot(job))
                yield submit(job)
            else:
                yield Finished(attempt, slot(job))
    finally:  # interrupted (or done): whatever still runs is cancelled
        for ref in pending:
            ray.cancel(ref, force=True)


def slot(job: SweepJob) -> str:
    """The view's row for a job in the cluster's hands (queued or running: Ray does not say which)."""
    return f"ray: {job.label}"
