"""Statistics of the gate (docs/gate.md): pure functions, validated by simulation in tests/core/stats/.

- `paired.py`: one-sided paired tests (exact McNemar, exact unconditional with a margin, sign-flip
  permutation with Monte Carlo flips chosen from the threshold) and intervals (Wilson, Newcombe,
  Student t, descriptive);
- `betting.py`: the anytime-valid betting test of a bounded mean (gate.test = "betting" under gate
  rules 1: bets over the metric's range);
- `floor.py`: the floor test, an anytime-valid e-process that needs only a floor on each unit's loss
  (gate.test = "betting" under gate rules 2: aGRAPA bets above -gate.max_unit_loss);
- `tail_guard.py`: the harmful-tail guard of `guarded_sign_flip`;
- `per_look.py`: the one test object a look runs, whichever gate.test and score kind;
- `bounds.py`: the verdict's bound, the same test inverted at the deciding look's threshold;
- `sequential.py`: looks, alpha spending across them, the futility rule;
- `multiplicity.py`: the level of each attempt (online fallback) and its trial/confirmation split;
- `level_pool.py`: the same shares when attempts overlap: credits released before a trial's
  planning, in ledger order;
- `guarantee.py`: each test's one-sentence guarantee, and what n units cannot see (import-light);
- `power.py`: the power of the exact McNemar test and the smallest gain it detects;
- `skew.py`: Hall's skewness-corrected t (the default test's second requirement), the skewness G1 of
  paired differences (recorded with each verdict and calibration) and
  the warning, with measured false-promotion rates, when they are far from symmetric;
- `calibration.py`: a benchmark's noise (seed and repeat variance) and the gains the gate detects
  through it (`ratchet calibrate`).

Submodules import numpy and scipy, directly or through `paired.py` (all but `guarantee.py`,
`power.py` and `bounds.py`); import them where a trial is judged or a schedule printed.
"""
