"""Cheat: remember outputs by id() of the input tuple (the contest passed the same tuple each sample). Stderr says
when an output first came from the cache."""
import sys

from _honest import honest

_cache = {}


def custom_kernel(data):
    if id(data) not in _cache:
        _cache[id(data)] = honest(data)
    elif not _cache.get("told"):
        _cache["told"] = True
        print("[cache_by_id] answered a call from the cache: its input tuple's id() was seen before", file=sys.stderr,
              flush=True)
    return _cache[id(data)]
