"""The measuring side of nvfp4-arena: worker processes, timing, speed of light, results."""
