"""The trusted side: the evaluator process. It never imports a submission; it generates every input,
computes every reference, checks every output and input, decides every verdict and alone writes records."""
