"""Fault: writes text to every file descriptor it inherited (stdout, stderr, the result channel, ...)."""
import os


def custom_kernel(data):
    for fd in range(0, 256):
        try:
            os.write(fd, b"garbage " * 64 + b"\n")
        except OSError:
            continue
    return data[-1]
