"""Where the repository lies: ROOT, the folder that holds run.py, harness/, reference/ and submissions/."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
