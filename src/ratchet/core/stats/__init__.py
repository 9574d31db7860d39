"""Statistics of the gate (DESIGN.md §6): pure functions, validated by simulation in tests/stats/.

- `paired`: one-sided paired tests (exact McNemar, exact unconditional with a margin, sign-flip
  permutation) and intervals (Wilson, Newcombe, Student t);
- `sequential`: looks, alpha spending across them, the futility rule;
- `multiplicity`: the level each trial of a campaign is granted.

Submodules import numpy and scipy; import them where a trial is judged or a schedule printed.
"""
