"""One module per command: run, check, compare, init, runs (status, report).
"""
