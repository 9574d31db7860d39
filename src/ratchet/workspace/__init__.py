"""The workspace: safe git (`git.Git`), trees materialized and sealed without filters, and the
scope check of a candidate's changes (`scope.check_scope`)."""

from ratchet.workspace.git import Git
from ratchet.workspace.scope import DiffEntry, ScopeReport, check_scope

__all__ = ["DiffEntry", "Git", "ScopeReport", "check_scope"]
