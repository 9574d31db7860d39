"""Errors that reach the user: a stable code, a message naming what is wrong, a hint, an exit code.

Exit codes (docs/errors.md): 0 ok, 1 internal error, 2 bad input (contract, arguments, data,
unsupported setting), 3 a check failed (`verify`), 130 interrupted.
Every code with its exit code and meaning: `ratchet.core.error_codes.ERROR_CODES` (docs/errors.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

EXIT_OK: Final = 0
EXIT_INTERNAL: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_CHECK_FAILED: Final = 3
EXIT_INTERRUPTED: Final = 130

ExitCode = Literal[0, 1, 2, 3, 130]
EXIT_CODES: Mapping[int, str] = {
    EXIT_OK: "ok",
    EXIT_INTERNAL: "internal error: a failure Ratchet did not expect (the traceback with --debug)",
    EXIT_BAD_INPUT: "bad input: the contract, the arguments, the data or the run directory; or an unsupported setting",
    EXIT_CHECK_FAILED: "a check failed (`ratchet verify`)",
    EXIT_INTERRUPTED: "interrupted: Ctrl-C or SIGTERM; jobs were killed and the run can be resumed",
}
"""The process exit codes, each with its meaning (docs/errors.md lists them)."""


class RatchetError(Exception):
    """An error with a stable `code` (matched by tests and --json users), a `message` naming the
    exact key, file, job or unit, an optional `hint` saying what to do, and the process `exit_code`.
    """

    default_exit_code = EXIT_BAD_INPUT

    def __init__(self, code: str, message: str, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.exit_code = self.default_exit_code if exit_code is None else exit_code

    def to_json(self) -> dict[str, str | None]:
        """The `error` object of the --json envelope: {"code", "message", "hint"}."""
        return {"code": self.code, "message": self.message, "hint": self.hint}

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} (hint: {self.hint})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by state, not by re-calling __init__ (whose arguments differ between subclasses):
        an error raised in a worker process reaches the parent whole."""
        return _rebuild_error, (type(self), self.message, dict(self.__dict__))


def _rebuild_error(cls: type[RatchetError], message: str, state: dict[str, Any]) -> RatchetError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ContractError(RatchetError):
    """`ratchet.toml` is missing, unparsable or invalid; codes start with `contract.`."""


class UnsupportedError(RatchetError):
    """A setting the schema knows but this build cannot run yet; code `unsupported.<what>`."""


class DataError(RatchetError):
    """Bad user data (examples file, revisions, run ids); codes name the data."""


class PlanError(RatchetError):
    """A trial that cannot be compiled into a consistent plan; codes start with `plan.`."""


class LedgerError(RatchetError):
    """A run directory that is locked, torn, tampered with or inconsistent; codes start with `ledger.`."""


class MeasurementError(RatchetError):
    """A measurement that cannot proceed (e.g. the baseline preflight yields no metric)."""


class SandboxError(RatchetError):
    """The sandbox was required (`sandbox.mode = "bwrap"`) but does not work on this machine."""


class GitError(RatchetError):
    """A git operation failed; the message carries git's stderr."""
