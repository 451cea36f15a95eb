"""Raises on the first call."""


def custom_kernel(data):
    raise RuntimeError("kernel exploded")
