"""How the evaluator's process leaves on SIGTERM and Ctrl-C: one line, then SystemExit(128 + the signal) in its main
thread, so that the run's `finally` blocks and exit handlers stop its workers (harness.evaluator.supervisor).

Not inside an import. Code that an import runs may clear whatever exception is raised in it, SystemExit included,
and go on: torch's C extension does so around the import of numpy it starts while torch is imported. A signal that
landed there was announced and then lost, and the run went on with its worker until the case's timeout. So a
signal that arrives while the main thread is in an import is raised again once the main thread has left every
import: a thread watches for that and signals the main thread anew, again and again until the SystemExit is raised
(the main thread may have entered another import between the thread's look and the signal's arrival). Once it is
raised, further signals are left alone: they would cut short the `finally` blocks that stop the workers.
"""
import signal
import sys
import threading
from collections.abc import Callable

IMPORT_MACHINERY = "<frozen importlib._bootstrap>"  # the file name of the frames that run an import
WATCH_S = 0.01  # how often the thread looks whether the main thread is still in an import
SIGNALS = (signal.SIGTERM, signal.SIGINT)

_watcher: threading.Thread | None = None
_left = threading.Event()  # the main thread has raised its SystemExit


def importing(frame) -> bool:
    """Whether `frame`, or a frame that called it, belongs to an import (the code a module runs at its import)."""
    while frame is not None:
        if frame.f_code.co_filename == IMPORT_MACHINERY:
            return True
        frame = frame.f_back
    return False


def _signal_after_imports(signum: int) -> None:
    main = threading.main_thread().ident
    while not _left.is_set():
        if not importing(sys._current_frames().get(main)):
            signal.pthread_kill(main, signum)  # to the main thread itself: a wait it is blocked in ends (EINTR)
        _left.wait(WATCH_S)


def exit_on_signals(announce: Callable[[str], None]) -> None:
    """On SIGTERM and SIGINT: announce(the signal's name) once, and SystemExit(128 + the signal) in the main thread,
    at once or, inside an import, right after it; nothing more once it is raised."""
    announced = []

    def leave(signum, frame):
        global _watcher
        if _left.is_set():
            return
        if not announced:
            announced.append(signum)
            announce(signal.Signals(signum).name)
        if not importing(frame):
            _left.set()
            sys.exit(128 + signum)
        if _watcher is None or not _watcher.is_alive():
            _watcher = threading.Thread(target=_signal_after_imports, args=(signum,), name="leave-after-imports",
                                        daemon=True)
            _watcher.start()

    for signum in SIGNALS:
        signal.signal(signum, leave)
