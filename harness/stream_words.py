"""Two int32 words in the evaluator's GPU memory that order its CUDA stream with the worker's: "go", which the
evaluator's stream writes and the worker's stream waits for before its calls, and "done", which the worker's stream
writes after its calls and the evaluator's stream waits for (harness.evaluator.clock). Both sides use this module:
the evaluator owns the words (an allocation of its own, shared through CUDA IPC), the worker maps them.

The waits and writes are the driver's stream memory operations (cuStreamWaitValue32, cuStreamWriteValue32), which
torch does not expose: the GPU's front end resolves them, with no kernel. A wait passes once the word, read as a
signed difference from the value, is not negative (CU_STREAM_WAIT_VALUE_GEQ), so sample numbers that only grow need
no reset. Neither call may meet a module load or an allocation that synchronizes while its stream waits: that call
would wait for the stream, and the stream for the other process.
"""
import ctypes
import functools

GO, DONE = 0, 1  # the words' indices
COUNT = 2
WAIT_GEQ = 0  # CU_STREAM_WAIT_VALUE_GEQ
WRITE_DEFAULT = 0  # CU_STREAM_WRITE_VALUE_DEFAULT: with a memory barrier before the write


@functools.cache
def _driver() -> tuple:
    """(wait, write) from the CUDA driver library; the _v2 entry points need no driver option."""
    lib = ctypes.CDLL("libcuda.so.1")
    found = []
    for name in ("cuStreamWaitValue32", "cuStreamWriteValue32"):
        fn = getattr(lib, f"{name}_v2", None) or getattr(lib, name)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        fn.restype = ctypes.c_int
        found.append(fn)
    return tuple(found)


def _check(what: str, rc: int):
    if rc != 0:
        raise RuntimeError(f"{what} failed with CUDA driver error {rc}")


class StreamWords:
    """The words at `address` (a device pointer to COUNT int32), waited for and written by a stream given as its
    driver handle (torch's `Stream.cuda_stream`)."""

    def __init__(self, address: int):
        self.address = address
        self._wait, self._write = _driver()

    def wait(self, stream: int, index: int, value: int):
        """The stream waits until word `index` reaches `value`."""
        _check("cuStreamWaitValue32", self._wait(stream, self.address + 4 * index, value & 0xFFFFFFFF, WAIT_GEQ))

    def write(self, stream: int, index: int, value: int):
        """The stream writes `value` into word `index` once its earlier work is done."""
        _check("cuStreamWriteValue32", self._write(stream, self.address + 4 * index, value & 0xFFFFFFFF,
                                                   WRITE_DEFAULT))
