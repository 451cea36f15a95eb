"""Fault: a file that raises while it is imported (outside submissions/)."""
import math

RATIO = math.sqrt(2)
raise ValueError("broken at import")
