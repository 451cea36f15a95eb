"""Tools a developer runs by hand to measure or inspect (calibration, contest parity, Nsight Compute)."""
