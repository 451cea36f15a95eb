"""The untrusted side: the worker process that imports one submission and calls it. Nothing here holds
a secret or decides a verdict; what it reports is checked by the evaluator (harness.evaluator)."""
