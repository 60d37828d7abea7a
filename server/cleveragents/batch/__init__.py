"""Batch runs: a suite of tasks over a matrix of configurations (`cleveragents batch`)."""
