"""Targets: what is measured, behind the Target seam (`base.py`), built from the contract by
`factory.py`.

Benchmark targets: `benchmark.py` (seeds as units, confirmation on fresh ones), `shell.py` (one
`/bin/sh -c` job per unit), `suite.py` (`[[target.suite]]` members run in the primary's job, pure),
`metric.py` (the metric read from stdout, pure), `imports.py` (which
modules in scope a `python FILE` benchmark imports). Examples targets: `examples.py` (the file loaded,
split and fingerprinted), `examples_target.py` (the target), `examples_measure.py` (a shard job's pure pieces),
`checks.py` (does an output pass `[[target.checks]]`), `shard_runner.py` (runs a solution per
example, inside the job, stdlib only), `prompt_solution.py` (a prompt solution: each example answered by
the eval model, the replies judged by the checks).

Effects: reads the examples file, the project's benchmark sources and the jobs' output files;
`custom` checks run a script of the project; the jobs themselves run on the executor the loop hands
in.
"""
