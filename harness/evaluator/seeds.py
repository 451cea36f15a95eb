"""Seeds of the inputs the evaluator generates, derived with a keyed hash whose key never leaves its process.

The correctness pass of a benchmark uses the contest's own public seeds (so its inputs are the contest's, bit for
bit); every timed sample (its calls' inputs drawn at once: reference.draws), and every leaderboard input, gets a
seed from HMAC-SHA256 under a key drawn when the evaluator starts. Knowing the harness's source and every earlier
seed says nothing about the next one.
"""
import hashlib
import hmac
import secrets

SEED_BITS = 63  # torch.manual_seed takes any non-negative 64-bit value; 63 keeps it a signed int too
_drawn = False  # set once this process has drawn a key: a worker forked after that would hold a copy of it


def drawn() -> bool:
    """Whether this process has drawn a secret key (harness.evaluator.forked forks no worker after that)."""
    return _drawn


class SeedSource:
    def __init__(self, key: bytes | None = None):
        global _drawn
        _drawn = _drawn or not key
        self._key = key or secrets.token_bytes(32)

    def seed(self, *parts) -> int:
        digest = hmac.new(self._key, repr(parts).encode(), hashlib.sha256).digest()
        return int.from_bytes(digest[:8], "little") >> (64 - SEED_BITS)
