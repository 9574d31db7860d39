"""The workspace: safe git (`git.py`, every command through `gitrun.py`), trees materialized and sealed
without filters (`trees.py`), clean checkouts for a batch of jobs (`checkouts.py`), stale git lock
files (`locks.py`), and the scope check of a candidate's changes (`scope.py`, pure).

Effects: runs git on the project's repository; writes checkouts and reads directories back into
trees; removes stale git lock files.
"""

from ratchet.workspace.git import Git
from ratchet.workspace.scope import DiffEntry, ScopeReport, check_scope

__all__ = ["DiffEntry", "Git", "ScopeReport", "check_scope"]
