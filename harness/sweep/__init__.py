"""Sweeps: many runs spread over GPU lanes or a Ray cluster, each run a run.py process of its own."""
