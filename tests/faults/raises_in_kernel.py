"""Fault: custom_kernel raises from a helper of its own."""


def helper(c):
    return c.missing_attribute


def custom_kernel(data):
    return helper(data[-1])
