"""One leg of a command agent, as a job and as a record: the CLI's command line rendered from the
template with its program as found (`program.agent_program`), its environment (allow-listed values
and the `pass_env` names, nothing else of the operator's), its time limit and sandbox
(`program.leg_sandbox`); then its `agent.leg` payload, with its command line and output as blobs and
what it was charged from the usage the CLI reported.

Pure but for reading the leg's output files (`output.read_leg_output`) and storing blobs through
the callback it is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from msgspec import UNSET

from ratchet.agents.command.limits import CHANNEL_DIR, LEG_OUTPUT_CAP_BYTES
from ratchet.agents.command.output import LegOutput, output_fields, read_leg_output
from ratchet.agents.command.program import agent_program, leg_sandbox
from ratchet.agents.command.requests import LegRequests
from ratchet.agents.command.template import CliReport, read_cli_report, render_argv
from ratchet.compute.base import JobResult, JobSpec
from ratchet.compute.env import default_path
from ratchet.compute.programs import ProgramReach
from ratchet.core.budget import Charge
from ratchet.core.budget.agent_kinds import leg_charge
from ratchet.core.contract import CommandAgentConfig
from ratchet.core.payloads import AgentLeg
from ratchet.core.vocab import LegOutcome

LegKind = Literal["start", "wake", "nudge", "revise"]
"""start: the attempt's first leg (the prompt). wake: after launches ran. nudge: after a leg that
ended without a request. revise: a revision's first leg (the verdict on the session's last
submission)."""

PROMPT_FILE = "prompt.md"
WAKE_FILE = "wake.md"
HOME_DIR = "home"

AGENT_STATE_ENV = {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_STATE_HOME": "state",
                   "XDG_CACHE_HOME": "cache", "CLAUDE_CONFIG_DIR": "claude", "CODEX_HOME": "codex"}
"""Variables pointing the CLI's own state (sessions, settings) under `<channel>/home/`, which lives
as long as the attempt (the executor's HOME is a scratch directory removed after every leg)."""


@dataclass(frozen=True)
class LegRun:
    """How far one leg got: its command line as run and how its process ended (None: not reached)."""

    argv: tuple[str, ...] | None = None
    result: JobResult | None = None


def leg_env(workspace: Path, pass_env: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    """The agent's complete environment: PATH (the channel first), the channel and workspace paths,
    the CLI's state directories under `<channel>/home/` (AGENT_STATE_ENV), and each `pass_env` name
    set in `environ`."""
    channel = workspace / CHANNEL_DIR
    env = {"PATH": f"{channel}:{default_path()}", "LANG": "C.UTF-8", "RATCHET_CHANNEL": str(channel),
           "RATCHET_WORKSPACE": str(workspace)}
    for var, sub in AGENT_STATE_ENV.items():
        env[var] = str(channel / HOME_DIR / sub)
    for name in pass_env:
        if name in environ:
            env[name] = environ[name]
    return env


def leg_job(config: CommandAgentConfig, read_only: tuple[str, ...], environ: Mapping[str, str], workspace: Path,
            job_id: str, kind: LegKind, message_file: str, message: str, session: str | None,
            wall_left: float | None) -> tuple[JobSpec, ProgramReach]:
    """The job that runs the CLI for one leg (id `job_id`, in `workspace`): `command` rendered with
    the message at `<channel>/<message_file>` (`wake_command` for a leg after the first once the CLI
    reported `session`), its program as found; a limit of `timeout_s`, at most `wall_left` seconds
    (at least 1); its sandbox binding `read_only`; stdout and stderr each capped at
    LEG_OUTPUT_CAP_BYTES (their end kept). Also where its program was found. Raises ContractError
    `contract.agent_template` for a template that does not render."""
    channel = workspace / CHANNEL_DIR
    values = {"prompt": str(channel / message_file), "prompt_text": message, "workspace": str(workspace),
              "channel": str(channel)}
    template = config.command
    if kind != "start" and config.wake_command and session:
        template, values["session"] = config.wake_command, session
    timeout = config.timeout_s if wall_left is None else max(1.0, min(config.timeout_s, wall_left))
    argv = render_argv(template, values)
    reach = agent_program(argv[0])
    argv[0] = reach.exec_path
    env = leg_env(workspace, config.pass_env, environ)
    if reach.user_base:
        env["PYTHONUSERBASE"] = reach.user_base
    spec = JobSpec(job_id=job_id, argv=tuple(argv), workdir=workspace, env=env, timeout_s=timeout,
                   sandbox=leg_sandbox(reach, config.network, read_only), output_cap_bytes=LEG_OUTPUT_CAP_BYTES)
    return spec, reach


def leg_payload(attempt: int, leg: int, kind: LegKind, message: str, run: LegRun, requests: LegRequests | None,
                outcome: LegOutcome, problem: str | None, config: CommandAgentConfig,
                record_blob: Callable[[bytes], str]) -> tuple[AgentLeg, Charge | None, CliReport | None]:
    """The `agent.leg` payload of one leg (its message, requests, command line and output stored
    through `record_blob`), what it was charged (None: its CLI reported no usage) and what the CLI
    reported of itself (None: the leg never ran)."""
    result = run.result
    output = read_leg_output(result) if result is not None else LegOutput()
    stdout = output.stdout if output.stdout is not None else (result.stdout_tail.encode() if result else None)
    report = read_cli_report(stdout) if stdout is not None else None
    charge = leg_charge(report.tokens, report.cost_usd, config.price) if report is not None else None
    payload = AgentLeg(
        attempt=attempt, leg=leg, leg_kind=kind, outcome=outcome, problem=problem,
        message_blob=record_blob(message.encode("utf-8")),
        requests_blob=record_blob(json.dumps(requests.to_json()).encode()) if requests else None,
        job_id=result.job_id if result else None, state=result.state if result else None,
        exit_code=result.exit_code if result else None,
        elapsed_s=result.elapsed_s if result else None,
        session_id=report.session_id if report else None, tokens=report.tokens if report else {},
        cost_usd=report.cost_usd if report else None,
        charged=charge.to_json() if charge is not None else UNSET,
        **output_fields(run.argv, output, record_blob),
    )
    return payload, charge, report
