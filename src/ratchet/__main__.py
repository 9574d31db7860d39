"""`python -m ratchet`: the same as the `ratchet` console script."""

from ratchet.cli import main

main()
