"""Human rendering: tables, live progress, the status result, reports and plots. Each renderer takes
the dict `--json` prints (or the folded state) and draws it.

`render.py` (command results: init, check, status; shared formats), `calibration.py` (`ratchet
calibrate`), `verification.py` (`ratchet verify`), `progress.py` (a
campaign's live progress), `status.py` (the status result, built from the folded ledger), `watch.py`
(`ratchet watch`'s frame), `guardrail_text.py` (a guardrail's result as one line), `report/`
(report.md, the HTML report, plots, one attempt).

Effects: writes to the terminal (stdout, stderr); the live views read the keyboard.
"""
