"""The run report: gathered once (`data.py`), said in shared sentences (`text.py`), written as
report.md (`markdown.py`) or one self-contained HTML page (`html.py`, built from `html_parts.py`'s
tables and figures, with `html_examples.py`'s parameters and per-example sections, styled by
`report.css`), with plots (`plots.py`, matplotlib; a search run's slice and importance plots in
`params.py`, Optuna); one attempt in full (`attempt.py`, `ratchet report --attempt`); a command
agent's legs as both reports show them (`legs.py`).
Plain values in, text out; effects: `plots.py` writes PNG files.
"""
