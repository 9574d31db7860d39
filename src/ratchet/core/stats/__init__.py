"""Statistics of the gate (docs/gate.md): pure functions, validated by simulation in tests/core/stats/.

- `paired`: one-sided paired tests (exact McNemar, exact unconditional with a margin, sign-flip
  permutation with Monte Carlo flips chosen from the threshold) and intervals (Wilson, Newcombe,
  Student t, descriptive);
- `betting`: the anytime-valid betting test of a bounded mean (gate.test = "betting");
- `tail_guard`: the harmful-tail guard of `guarded_sign_flip`;
- `look_test`: the one test object a look runs, whichever gate.test and score kind;
- `bounds`: the verdict's bound, the same test inverted at the deciding look's threshold;
- `sequential`: looks, alpha spending across them, the futility rule;
- `multiplicity`: the level of each attempt (online fallback) and its trial/confirmation split;
- `guarantee`: each test's one-sentence guarantee, and what n units cannot see (import-light).

Submodules import numpy and scipy (except `guarantee`); import them where a trial is judged or a
schedule printed.
"""
