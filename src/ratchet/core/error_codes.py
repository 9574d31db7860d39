"""Every error code Ratchet reports, each with its exit code and a one-line meaning a user can act on.

A `RatchetError.code` (and the CLI's own `usage`, `interrupted`, `internal`) is stable: tests and
`--json` users match on it. `ERROR_CODES` is its one list; docs/errors.md shows it as a table, and
tests/core/test_error_codes.py fails when a raise site in `src/ratchet` uses a code missing here or
a code here is raised nowhere.

A family is one entry for codes whose suffix is built at run time: its key holds a `<placeholder>`
(`unsupported.<setting>`) and `lookup` matches any code of that shape. A code of a family that some
site spells out in full may also have its own entry, which `lookup` prefers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ratchet.core.errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, ExitCode

CODE_SHAPE = re.compile(r"^[a-z][a-z_]*(\.([a-z][a-z0-9_]*|<[a-z_]+>))*$")
"""How a code is spelled: lowercase dotted words (`ledger.torn`); a family's last parts may be a
`<placeholder>`."""

PLACEHOLDER = re.compile(r"<[a-z_]+>")
"""A family key's run-time part (`<setting>` in `unsupported.<setting>`)."""


@dataclass(frozen=True)
class ErrorCode:
    """One registered code. exit_code: the process exit code a raise of it ends with (one of
    `errors.EXIT_CODES`); meaning: one line saying what is wrong and what to do about it."""

    exit_code: ExitCode
    meaning: str


def _bad_input(meaning: str) -> ErrorCode:
    return ErrorCode(EXIT_BAD_INPUT, meaning)


_REPORT = "a bug in Ratchet: report it with the message"
"""The way out of a code only a bug in Ratchet (or in code calling its API) can reach."""

ERROR_CODES: Mapping[str, ErrorCode] = {
    "attempt.not_found": _bad_input('the run has no attempt with that number: `ratchet status RUN` lists its attempts'),
    "calibrate.too_few_seeds": _bad_input('fewer than 2 seeds were measured twice: the benchmark failed on the others'
                                          ' (the message names the first failed job)'),
    "calibrate.no_val": _bad_input('the examples target has no val split to calibrate on: give target.split a val '
                                   'share'),
    "calibrate.bad_effect": _bad_input('--effect must be a positive number (a pass rate in (0, 1] for examples)'),
    "calibrate.bad_seeds": _bad_input('--seeds must be between 2 and 1000'),
    "verify.no_contract": _bad_input('the run directory holds no readable contract.toml: the run cannot be verified'),
    "verify.no_salt": _bad_input("run.started records no salt: the run's plans cannot be re-compiled"),
    "examples.bad_fingerprint": _bad_input("a recorded examples fingerprint blob is malformed: the run's split cannot"
                                           " be rebuilt"),
    "compute.gpus_too_few": _bad_input("GPU jobs ask for more devices than compute.gpus declares: list this machine's"
                                       " GPUs or lower compute.gpus_per_job"),
    "compute.gpus_duplicate": _bad_input('compute.gpus names a device twice: list each device once'),
    "compute.gpus_held": _bad_input(f"a GPU device was handed out twice: {_REPORT}"),
    "slurm.<call>": _bad_input('a Slurm command (sbatch, scontrol, squeue, scancel...) failed or did not run: check '
                               '`sinfo` and [compute.slurm]'),
    "gate.bad_history": _bad_input(f"an attempt's level history or timeline holds an unknown outcome or an impossible "
                                    f"order: {_REPORT}"),
    "keys.unreadable": _bad_input("the project's signing key under .ratchet/keys/ cannot be read: fix its permissions"
                                  " or remove it to make a new one"),
    "keys.bad_public_key": _bad_input('the public key given to `ratchet verify --key` is not an Ed25519 public key: '
                                      'pass the .pub file of the project'),
    "git.bad_ref": _bad_input(f"a git ref name Ratchet built is not valid: {_REPORT}"),
    "slurm.sbatch": _bad_input("sbatch refused the job array: check `sinfo`, the partition and [compute.slurm]"),
    "slurm.foreign_job": _bad_input("a Slurm job id the ledger records is not this run's (its job name is not the "
                                    "run's token): nothing was cancelled; check `squeue`"),
    "slurm.test_only": _bad_input("`sbatch --test-only` (the shape check of `ratchet check --preflight`) did not run: "
                                  "check that Slurm is installed and `sinfo` answers"),
    "slurm.unschedulable": _bad_input("the Slurm scheduler can never run a job of the contract's shape (too many "
                                      "CPUs, memory or GPUs for any node, a partition, feature or QOS that does "
                                      "not allow it): the message names the scheduler's answer; change [compute]"),
    "verify.failed": ErrorCode(EXIT_CHECK_FAILED, "a check of `ratchet verify` failed: the findings name each (code, "
                                                  "event seq, what differed)"),
    # The CLI's own codes (cli.py): no RatchetError carries them except `interrupted`.
    "usage": _bad_input("the command line is wrong (unknown option, missing argument): printed as `error (usage): ...` "
                        "with the help to read (`ratchet COMMAND --help`)"),
    "interrupted": ErrorCode(EXIT_INTERRUPTED, "Ctrl-C or SIGTERM stopped the command and killed its jobs: "
                             "resume the run, or run the comparison again (finished measurements are cached)"),
    "internal": ErrorCode(EXIT_INTERNAL, "a failure Ratchet did not expect: re-run with --debug and report the "
                          "traceback"),
    # agent.*
    "agent.sandbox_unavailable": _bad_input('agent.kind = "command" runs the agent under bubblewrap, which does not '
                                            "work here: install bubblewrap and allow unprivileged user namespaces"),
    # canonical.*: a value to be recorded has no canonical JSON form
    "canonical.bad_key": _bad_input(f"a mapping to be recorded has a non-string key: {_REPORT}"),
    "canonical.int_range": _bad_input("an integer to be recorded is beyond 2^53 - 1 in size, which JSON does not hold "
                                      "exactly: keep metrics and settings within it"),
    "canonical.naive_datetime": _bad_input(f"a datetime to be recorded has no timezone: {_REPORT}"),
    "canonical.no_round_trip": _bad_input(f"a value to be recorded would not read back as written: {_REPORT}"),
    "canonical.non_finite": _bad_input("a NaN or infinite number was to be recorded, which JSON cannot hold: make "
                                       "the metric or setting finite"),
    "canonical.unknown_type": _bad_input(f"a value to be recorded has a type with no JSON form: {_REPORT}"),
    # channel.*: the command agent's channel folder in its workspace
    "channel.bad_name": _bad_input("a channel file name is empty, holds a slash, or is . or ..: use a plain file name"),
    "channel.missing": _bad_input("a file or folder of the agent's channel does not exist or cannot be reached"),
    "channel.no_attempt": _bad_input(f"the command agent was woken for an attempt it never started: {_REPORT}"),
    "channel.no_workspace": _bad_input("the agent's workspace cannot be opened: it was removed or its permissions "
                                       "changed"),
    "channel.not_a_directory": _bad_input("a path of the agent's channel is not a directory: the channel folder must "
                                          "be a plain directory"),
    "channel.not_regular": _bad_input("a channel file is not a regular file (a FIFO, device or folder): write plain "
                                      "files"),
    "channel.symlink": _bad_input("a path of the agent's channel is a symlink: the channel folder must be a plain "
                                  "directory"),
    "channel.too_large": _bad_input("a channel file is larger than its size cap: write a smaller file"),
    "channel.write_failed": _bad_input("no free temporary name to write a channel file: clear stray temporary files "
                                       "from the channel folder"),
    # compute.*
    "compute.closed": _bad_input(f"a job was submitted to an executor that was already closed: {_REPORT}"),
    "compute.max_parallel": _bad_input("compute.max_parallel is below 1: set it to 1 or more"),
    # contract.*: ratchet.toml
    "contract.agent_brief": _bad_input("agent.command.brief cannot be read: name a UTF-8 text file of the project"),
    "contract.agent_not_found": _bad_input("a command agent's program is not found (or not executable) where each "
                                           "leg looks for it: install it on the PATH Ratchet runs with, or name it "
                                           "by its absolute path"),
    "contract.agent_template": _bad_input("an agent.command template is empty, badly quoted, or names a placeholder "
                                          "with no value: fix the template"),
    "contract.check_name_duplicate": _bad_input("two [[target.checks]] share one `name`: give every check its own "
                                                "name"),
    "contract.changed": _bad_input("ratchet.toml changed since the run started: restore it, or `ratchet abandon` "
                                   "the run and start a new one"),
    "contract.guardrail_allowance": _bad_input("a [[gate.guardrails]] entry allows no regression (max_regression "
                                               "and max_regression_rel both 0): a zero allowance demands a "
                                               "significant improvement of the guardrail; set the largest regression "
                                               "you accept"),
    "contract.guardrail_check": _bad_input("an examples target's [[gate.guardrails]] metric names no check: add that "
                                           "`name` to one of the [[target.checks]]"),
    "contract.guardrail_duplicate": _bad_input("two [[gate.guardrails]] entries name one metric: keep one"),
    "contract.guardrail_primary": _bad_input("a [[gate.guardrails]] metric is target.metric itself: a guardrail is a "
                                             "further key of the same JSON line"),
    "contract.invalid": _bad_input("a contract value has the wrong type, is out of range or contradicts another: the "
                                   "message names the key and its line"),
    "contract.missing": _bad_input("there is no ratchet.toml in the project directory: write one with `ratchet init`"),
    "contract.missing_key": _bad_input("a required contract key is absent: add it (`ratchet init` writes every key)"),
    "contract.path_missing": _bad_input("a path the contract names (a check script, agent.search.file, "
                                        "agent.command.brief, ...) is not where a run reads it (tracked in HEAD, or "
                                        "in the working tree): fix the typo the hint names, or commit the file"),
    "contract.path_scope": _bad_input("a path the contract names sits where scope defeats it (a search params file "
                                      "outside scope.allowed, a check script a candidate may change): fix scope"),
    "contract.prompt_unreadable": _bad_input("an agent.llm.prompts file cannot be read: give a UTF-8 text file, its "
                                             "path relative to the project root"),
    "contract.toml": _bad_input("ratchet.toml is not valid TOML: fix the syntax at the line named"),
    "contract.unenforceable_budget": _bad_input("a [budget] limit the configured agent kind cannot count (a model "
                                                "budget with the search or files agent; max_model_calls, or max_usd "
                                                "without a price, with a command agent): remove it or add the price"),
    "contract.unknown_key": _bad_input("ratchet.toml has a key the schema does not know, often a typo: the hint "
                                       "names the nearest known key"),
    "contract.unreadable": _bad_input("ratchet.toml cannot be read as UTF-8 text: check its permissions and "
                                      "encoding"),
    # examples.*: target.examples
    "examples.changed": _bad_input("the examples file changed since the run started: restore it, or start a new run"),
    "examples.checks_version": _bad_input("the run was judged under another version of the examples-check rules: "
                                          "start a new run"),
    "examples.conflict": _bad_input("one input appears with different expected outputs: keep one expected output "
                                    "per input"),
    "examples.empty": _bad_input("the examples file has no examples: add JSON lines with input and expected_output"),
    "examples.malformed": _bad_input("lines of the examples file are not JSON objects with input and "
                                     "expected_output: fix the lines named"),
    "examples.missing": _bad_input("target.examples names no file: point it at a JSONL file in the project"),
    "examples.too_few": _bad_input("too few examples to give every split with a fraction above 0 one example: add "
                                   "examples"),
    # files.*: the files agent
    "files.missing": _bad_input("agent.files.path is not a directory: point it at the folder of candidate files"),
    # gate.*: the statistical gate's settings and inputs
    "gate.bad_alpha": _bad_input("a level outside (0, 1) reached the level arithmetic: a bug in Ratchet (the "
                                 "contract takes gate.alpha in (0, 0.5] and refuses any other as contract.invalid)"),
    "gate.bad_margin": _bad_input("the effect margin is negative or not finite: set gate.min_effect and "
                                  "gate.min_effect_rel to finite values >= 0"),
    "gate.bad_max_attempts": _bad_input("budget.max_attempts is not an integer >= 1: set it to one"),
    "gate.bad_multiplicity": _bad_input("gate.multiplicity is neither campaign nor trial: use one of those"),
    "gate.bad_rules": _bad_input("run.started records gate rules this build does not know: verify the run with the "
                                 "Ratchet version that recorded it"),
    "gate.bad_score": _bad_input("a binary metric gave a score other than 0 or 1: use kind continuous for other "
                                 "metrics"),
    "gate.bad_settings": _bad_input("the gate's settings contradict each other: fix each problem the message lists"),
    "gate.bad_trial_index": _bad_input(f"the gate was asked about a trial numbered below 1: {_REPORT}"),
    "gate.duplicate_unit": _bad_input(f"the scores handed to the gate repeat a unit: {_REPORT}"),
    "gate.no_champion_mean": _bad_input(f"gate.min_effect_rel needs the champion's mean and none was recorded: "
                                        f"{_REPORT}"),
    "gate.too_few_units": _bad_input(f"a trial was judged before its first look's units were measured: {_REPORT}"),
    "gate.too_many_units": _bad_input(f"a trial was judged on more units than its last look: {_REPORT}"),
    # git.*: the project's repository
    "git.bad_branch": _bad_input("a name is not a valid git branch name"),
    "git.bad_path": _bad_input("a path is not a path inside the repository (absolute, or climbing out with ..)"),
    "git.bad_revision": _bad_input("a revision names no commit or tree of the repository: check it with "
                                   "`git log --oneline`"),
    "git.branch_checked_out": _bad_input("a branch Ratchet would move is checked out: check out another branch"),
    "git.branch_moved": _bad_input("a branch Ratchet writes moved under it: leave the ratchet/ branches alone while "
                                   "a run goes on"),
    "git.cat_file": _bad_input("git cat-file answered unexpectedly or ended early: check the repository with "
                               "`git fsck`"),
    "git.commit_failed": _bad_input("git commit-tree failed: the message carries git's stderr"),
    "git.merge_failed": _bad_input("git merge-tree could not re-base a candidate onto a moved champion (git < 2.38, "
                                   "an unknown tree): the message carries git's stderr"),
    "git.dest_not_empty": _bad_input("a checkout's destination exists and is not empty: use a fresh directory"),
    "git.failed": _bad_input("a git command failed: the message carries git's stderr"),
    "git.hash_failed": _bad_input("git hash-object failed on the working files: the message carries git's stderr"),
    "git.init_failed": _bad_input("git init failed: the message carries git's stderr"),
    "git.missing_object": _bad_input("a blob a tree names is missing from the repository: check it with `git fsck`"),
    "git.no_commits": _bad_input("the repository has no commit yet: commit the project first"),
    "git.not_a_repo": _bad_input("the project directory is not the top of a git repository: `git init` there and "
                                 "commit the project"),
    "git.not_installed": _bad_input("git is not on PATH: install git"),
    "git.patch_failed": _bad_input("a patch does not apply to the champion's tree: make it against the current "
                                   "champion"),
    "git.unsafe_path": _bad_input("a tree holds a path that is not safe to write (absolute, .. or .git): remove it "
                                  "from the tree"),
    "git.update_failed": _bad_input("git could not move a branch, HEAD or the index: the message carries git's "
                                    "stderr"),
    # init.*: `ratchet init`
    "init.bad_kind": _bad_input("--kind is neither benchmark nor examples"),
    "init.exists": _bad_input("ratchet.toml already exists and is never overwritten: edit it, or remove it first"),
    # job.*: one job's specification
    "job.bad_id": _bad_input(f"a job id holds characters other than [A-Za-z0-9_.-]: {_REPORT}"),
    "job.duplicate_id": _bad_input(f"two jobs of one run share an id: {_REPORT}"),
    "job.reserved_env": _bad_input("an environment variable the contract names is one Ratchet sets for every job, "
                                   "or the seed's: pick another name"),
    # ledger.*: a run directory
    "ledger.bad_digest": _bad_input("a blob reference is not a `sha256:<64 hex>` digest: the ledger was changed, "
                                    "or a bug in Ratchet"),
    "ledger.bad_job_id": _bad_input(f"a job id cannot name a folder of the run directory: {_REPORT}"),
    "ledger.bad_payload": _bad_input(f"an event's data does not fit its kind, so nothing was written: {_REPORT}"),
    "ledger.blob_corrupt": _bad_input("a blob's content no longer matches its digest: restore the run directory "
                                      "from a backup"),
    "ledger.blob_missing": _bad_input("a blob the ledger names is not in the run directory: restore it from a "
                                      "backup"),
    "ledger.blob_not_json": _bad_input("a blob that should hold JSON does not: restore the run directory from a "
                                       "backup"),
    "ledger.broken_chain": _bad_input("an events.jsonl line was changed after it was written (the hash chain "
                                      "breaks): restore it from a backup or start a new run"),
    "ledger.concurrent_write": _bad_input("another process wrote events.jsonl under this writer: only the process "
                                          "holding the run lock may write it"),
    "ledger.index_stale": _bad_input("the run's SQLite index does not follow on from its events: rebuild the "
                                     "index from the events"),
    "ledger.locked": _bad_input("another ratchet process is writing this run: wait for it, or stop it and resume"),
    "ledger.malformed": _bad_input("an events.jsonl line is not a well-formed event: restore it from a backup or "
                                   "start a new run"),
    "ledger.missing": _bad_input("the directory has no events.jsonl: is it a run directory?"),
    "ledger.old_format": _bad_input("the run was recorded in a ledger format this build does not resume: start a "
                                    "new run (status and report still read it)"),
    "ledger.run_exists": _bad_input(f"a run directory with the new run's id already exists: {_REPORT}"),
    "ledger.seq_gap": _bad_input("events.jsonl has missing or reordered events: restore it from a backup or "
                                 "start a new run"),
    "ledger.torn": _bad_input("the last events.jsonl line is an unfinished write (its process was killed): "
                              "`ratchet run --resume RUN_ID` repairs it"),
    "ledger.unreadable": _bad_input("events.jsonl cannot be read as a regular file: check the path and its "
                                    "permissions"),
    "ledger.write_failed": _bad_input("appending to events.jsonl failed (often a full disk): free space, then "
                                      "resume the run"),
    # plan.*: compiling or reading back a trial's plan
    "plan.bad_index": _bad_input(f"a trial or attempt number is below its minimum: {_REPORT}"),
    "plan.bad_json": _bad_input("a recorded plan cannot be read back, or its units do not fit its looks: the "
                                "ledger was changed, or a bug in Ratchet"),
    "plan.bad_looks": _bad_input("gate.units is not whole, positive and strictly increasing: give cumulative "
                                 "counts such as [10, 20, 40]"),
    "plan.bad_retry": _bad_input(f"a retry was asked for a candidate job or numbered below 1: {_REPORT}"),
    "plan.bad_seed": _bad_input(f"the campaign seed is not an integer: {_REPORT}"),
    "plan.bad_stage": _bad_input("a plan names a stage other than trial, confirm or holdout: the ledger was "
                                 "changed, or a bug in Ratchet"),
    "plan.bad_target": _bad_input(f"a plan's target settings are not plain JSON: {_REPORT}"),
    "plan.digest_mismatch": _bad_input("a recorded plan's digest does not match its content: the plan was changed "
                                       "after it was written"),
    "plan.duplicate_units": _bad_input(f"a plan repeats a unit: {_REPORT}"),
    "plan.missing_salt": _bad_input(f"the run's salt is missing, so unit seeds would be predictable: {_REPORT}"),
    "plan.missing_tree": _bad_input(f"a plan's tree is not a git tree hash: {_REPORT}"),
    "plan.no_units": _bad_input("gate.units is empty: set it, e.g. [10, 20, 40]"),
    # preflight.*: the baseline measured once before the first attempt
    "preflight.missing_module": _bad_input("the baseline stopped on a ModuleNotFoundError: install the module for "
                                           "the interpreter the message names, or give jobs the Python that has it "
                                           "(PATH, sandbox.keep_ratchet_venv, sandbox.read_only)"),
    "preflight.no_metric": _bad_input("the baseline does not measure: a timeout (raise target.timeout_s), or a "
                                      "command that does not print its metric as a single-line JSON object on "
                                      "stdout: run it by hand in a clean checkout"),
    "preflight.sandbox_only": _bad_input("the baseline measures outside the sandbox but not inside it: widen "
                                         'sandbox.read_only or sandbox.network, or set sandbox.mode = "none"'),
    # project.*: the project directory a command is given
    "project.no_dir": _bad_input("the project directory (DIR or --dir) does not exist or is not a directory: give "
                                 "the directory holding ratchet.toml"),
    # run.*: which run a command acts on
    "run.bad_id": _bad_input("the argument is not a run id (like 20261130-063650-ab12), or is a project directory "
                             "given where the run id goes: `ratchet runs --dir DIR` lists the runs"),
    "run.concurrent": _bad_input("another ratchet process is running in this project and would skew timings: "
                                 "wait, stop it, or pass --allow-concurrent"),
    "run.finished": _bad_input("the run already stopped, so there is nothing to resume or abandon: start a new run"),
    "run.interrupted_exists": _bad_input("an interrupted run of this project can be resumed: resume it, or "
                                         "`ratchet abandon` it, before starting another"),
    "run.is_compare": _bad_input("the run is a `ratchet compare`, which does not resume: run the comparison again"),
    "run.is_calibrate": _bad_input("the run is a `ratchet calibrate`, which does not resume: run it again"),
    "run.old_rules": _bad_input("the run was judged by older gate rules than this build's: start a new run; "
                                "status, report and verify still read it"),
    "run.not_found": _bad_input("no run with that id, or no run at all, in the project (or none appeared while "
                                "`ratchet watch` waited): `ratchet runs --dir DIR` lists the runs"),
    "run.not_started": _bad_input("the run stopped before run.started was recorded and measured nothing: start a "
                                  "new run"),
    # sandbox.*
    "sandbox.bad_mode": _bad_input("sandbox.mode is not auto, bwrap or none"),
    "sandbox.unavailable": _bad_input('sandbox.mode = "bwrap" but the sandbox does not work here: install '
                                      "bubblewrap and allow unprivileged user namespaces, or set "
                                      'sandbox.mode = "auto"'),
    # search.*: the search agent
    "search.params_missing": _bad_input("agent.search.file is not in the champion's tree: commit it"),
    "search.params_unreadable": _bad_input("the search agent's params file is not valid JSON or TOML (a JSON one "
                                           "must hold an object): fix it"),
    # unsupported.*: what the schema knows but this build cannot run (core/unsupported.py, cli.py)
    "unsupported.<setting>": _bad_input("a family: the suffix names a setting or command this build cannot run yet "
                                        "(e.g. agent_kind, gpus, verify); the hint says what runs"),
    "unsupported.compare_examples": _bad_input("`ratchet compare` of an examples target is not built: run a "
                                               "campaign with the files agent"),
    # workspace.*: the command agent's workspace
    "workspace.exists": _bad_input("the agent's workspace path already exists: use a fresh path per attempt"),
    "workspace.inside_project": _bad_input("the agent's workspace lies inside the project: put workspaces outside "
                                           "the repository"),
    "workspace.tracked_channel": _bad_input("the champion's tree tracks the agent's channel folder: remove it from "
                                            "the repository (git rm -r --cached)"),
}
"""Every error code, family keys included, in the order docs/errors.md lists them."""


def is_family(code: str) -> bool:
    """Whether `code` is a family key (holds a `<placeholder>`, e.g. `unsupported.<setting>`)."""
    return PLACEHOLDER.search(code) is not None


def family_pattern(key: str) -> re.Pattern[str]:
    """The regex a family key matches in full (`fullmatch`), each `<placeholder>` standing for one
    lowercase word: `unsupported.<setting>` matches `unsupported.gpus`, not `unsupported.a.b`."""
    parts = PLACEHOLDER.split(key)
    return re.compile("[a-z0-9_]+".join(re.escape(p) for p in parts))


def lookup(code: str) -> ErrorCode | None:
    """The registered entry of `code`: its own entry, else the first family whose key matches it;
    None for an unregistered code."""
    if code in ERROR_CODES:
        return ERROR_CODES[code]
    return next((entry for key, entry in ERROR_CODES.items() if is_family(key) and family_pattern(key).fullmatch(code)),
                None)
