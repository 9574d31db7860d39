"""One module per command: each calls the loop, the ledger or the core and returns the `--json`
result; `cli.py` parses its arguments and `present/` draws the result for people.

Commands: `init.py`, `check.py`, `run.py`, `compare.py`, `calibrate.py`, `runs.py` (runs, status, report),
`attempt.py` (report --attempt), `watch.py`, `verify.py` (with `verify_rederive.py`), `abandon.py`.
Shared: `contract_file.py` (reading ratchet.toml), `project.py` (the refusals run, compare and check
share), `contract_paths.py` (every path the contract names, checked where a run reads it and against
scope), `preflight.py` (the baseline measured once), `report_extras.py` (what the HTML report reads
beyond the status result: a search run's space, an examples run's per-example results).

Effects: those of each command: `init` writes a project's files; `run`, `compare` and `calibrate`
run jobs and write a run directory through the loop; `report` writes report files; `status`,
`watch` and `verify` read run directories.
"""
