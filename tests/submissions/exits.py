"""Kills its own process without a word."""
import os


def custom_kernel(data):
    os._exit(3)
