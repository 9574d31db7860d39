"""The one budget mechanism (pure): resources, charges, reservations and the refusal with its arithmetic.

Every budget of `[budget]` limits one resource. Work is asked for before it starts (`Account.refusal`,
`Account.reserve`): its charge (a worst case, or for wall time and CPU hours an expectation) must fit
in the limit after what is spent and what open reservations hold; otherwise it does not start and the
refusal (`BudgetStop`) says which budget and shows the sum. After the work, a reservation is settled
from what was used (`Account.settle`). The kernel asks for attempts and agents' launches
(`budget.jobs`), the llm agent for model calls (`budget.model`): a new resource is a row of
`RESOURCES`, not a new mechanism.

No effects: callers record what they reserve and settle in the ledger, and rebuild an Account from
it (`Account.replay`, or the reducer's `BudgetUsed` for the kernel's resources).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, cast, get_args

from ratchet.core.contract import Contract

ResourceName = Literal["attempts", "job_units", "cpu_hours", "wall_s", "gpu_hours", "val_trials", "model_calls",
                       "input_tokens", "output_tokens", "usd", "eval_calls", "eval_tokens", "eval_usd"]
"""What budgets limit: attempts started, job-units charged, CPU hours, wall seconds, GPU-hours, trials
on val (examples), model calls, input and output tokens, dollars; a prompt solution's eval and judge
calls, their tokens and dollars."""

BudgetName = Literal["max_attempts", "max_evaluations", "max_cpu_hours", "max_wall", "max_gpu_hours",
                     "max_val_trials", "max_model_calls", "max_input_tokens", "max_output_tokens", "max_usd",
                     "max_eval_calls", "max_eval_tokens", "max_eval_usd"]
"""The `[budget]` keys, in the order a refusal checks them (the name `run.stopped.data.budget` records)."""

BUDGET_NAMES: tuple[BudgetName, ...] = get_args(BudgetName)

USD_TOLERANCE = 1e-12
"""Float slack when comparing dollar sums with a limit (sums of products of decimal prices)."""

GPU_HOURS_TOLERANCE = 1e-9
"""Float slack when comparing GPU-hour sums with a limit (sums of thousands of seconds / 3600)."""


@dataclass(frozen=True)
class Resource:
    """One budgeted resource: its `name`, the `[budget]` key limiting it (`budget`; `attribute`: where
    the contract holds the limit in these units), how amounts print (`unit`, `digits` after the
    point), whether reaching the limit already stops work (`reaching`: wall time and CPU hours, whose
    use is only expected, stop when the sum reaches the limit; counts stop when it would exceed it),
    and the float `slack` allowed over the limit."""

    name: ResourceName
    budget: BudgetName
    attribute: str
    unit: str
    digits: int = 0
    reaching: bool = False
    slack: float = 0.0

    def num(self, amount: float) -> str:
        """`amount` to this resource's digits, e.g. "51", "0.2500"."""
        return f"{amount:.{self.digits}f}"

    def fmt(self, amount: float) -> str:
        """`amount` with its unit, e.g. "51 s", "0.2500 CPU h", "72 job-units"."""
        return f"{self.num(amount)} {self.unit}"

    def over(self, total: float, limit: float) -> bool:
        """True when `total` breaks `limit` (a limit of 0 is unlimited)."""
        if not limit:
            return False
        return total >= limit if self.reaching else total > limit + self.slack


RESOURCES: tuple[Resource, ...] = (
    Resource("attempts", "max_attempts", "max_attempts", "attempts"),
    Resource("job_units", "max_evaluations", "max_evaluations", "job-units"),
    Resource("cpu_hours", "max_cpu_hours", "max_cpu_hours", "CPU h", 4, reaching=True),
    Resource("wall_s", "max_wall", "max_wall_s", "s", 0, reaching=True),
    Resource("gpu_hours", "max_gpu_hours", "max_gpu_hours", "GPU h", 3, slack=GPU_HOURS_TOLERANCE),
    Resource("val_trials", "max_val_trials", "max_val_trials", "val trials"),
    Resource("model_calls", "max_model_calls", "max_model_calls", "model calls"),
    Resource("input_tokens", "max_input_tokens", "max_input_tokens", "input tokens"),
    Resource("output_tokens", "max_output_tokens", "max_output_tokens", "output tokens"),
    Resource("usd", "max_usd", "max_usd", "USD", 4, slack=USD_TOLERANCE),
    Resource("eval_calls", "max_eval_calls", "max_eval_calls", "eval calls"),
    Resource("eval_tokens", "max_eval_tokens", "max_eval_tokens", "eval tokens"),
    Resource("eval_usd", "max_eval_usd", "max_eval_usd", "eval USD", 4, slack=USD_TOLERANCE),
)
"""Every budgeted resource, in the order a refusal checks them (BUDGET_NAMES' order)."""

_NAMES: frozenset[str] = frozenset(get_args(ResourceName))
_LEGACY_KEYS = {"calls": "model_calls"}
"""Charge keys of ledger format 2's model events (`model.reserved.charge`, `model.called.charged`)."""


@dataclass(frozen=True)
class Charge:
    """An amount of each resource (absent: 0). Counts stay ints; hours, seconds and dollars are floats."""

    amounts: Mapping[ResourceName, float] = field(default_factory=dict)

    @classmethod
    def of(cls, **amounts: float) -> Charge:
        """A charge from keyword amounts, e.g. `Charge.of(job_units=72, wall_s=30.0)`; zeros are
        dropped. Raises ValueError for a name that is not a ResourceName."""
        unknown = set(amounts) - _NAMES
        if unknown:
            raise ValueError(f"not budgeted resources: {sorted(unknown)}")
        return cls(cast(dict[ResourceName, float], {k: v for k, v in amounts.items() if v}))

    def __getitem__(self, name: ResourceName) -> float:
        return self.amounts.get(name, 0)

    def __add__(self, other: Charge) -> Charge:
        keys = [r.name for r in RESOURCES if r.name in self.amounts or r.name in other.amounts]
        return Charge({k: self[k] + other[k] for k in keys})

    def to_json(self) -> dict[str, float]:
        """{resource name: amount} for a ledger event, in RESOURCES order."""
        return {r.name: self.amounts[r.name] for r in RESOURCES if r.name in self.amounts}

    @classmethod
    def from_json(cls, data: Mapping[str, float]) -> Charge:
        """The inverse of `to_json` (also reads format 2's `calls` key). Raises ValueError for an
        unknown key."""
        return cls.of(**{_LEGACY_KEYS.get(k, k): v for k, v in data.items()})


@dataclass(frozen=True)
class Reservation:
    """Work asked for and not settled yet: its `key`, the `charge` it holds, and `purpose` (how a
    refusal names it: "the holdout", "the model call attempt-3/executor")."""

    key: str
    charge: Charge
    purpose: str = ""


@dataclass(frozen=True)
class Settlement:
    """A closed reservation: its `key` and what was charged (zero when released unsent)."""

    key: str
    charge: Charge


@dataclass(frozen=True)
class BudgetStop:
    """Why a budget refuses the work asked for: `name` (a BudgetName) and `detail`, one sentence a
    user reads with the arithmetic (what is spent, what the work asks, what is reserved, the limit).
    `forecast`: the budget is not spent yet; the refusal is that the work would break it."""

    name: BudgetName
    detail: str
    forecast: bool = False


def limits_of(contract: Contract) -> dict[ResourceName, float]:
    """The limit of every resource under `contract.budget` (0: unlimited), in its units (wall in s)."""
    b = contract.budget
    return {r.name: getattr(b, r.attribute) for r in RESOURCES}


@dataclass
class Account:
    """A budget ledger in memory: the `limits`, what is `spent`, and the `open` reservations by key.

    `refusal` answers whether work may start; `reserve` holds it; `settle` closes it from what was
    used. Mutable, without effects: the caller records each reservation and settlement.
    """

    limits: Mapping[ResourceName, float]
    spent: Charge = Charge()
    open: dict[str, Reservation] = field(default_factory=dict)

    @property
    def committed(self) -> Charge:
        """Spent plus every open reservation's charge."""
        total = self.spent
        for r in self.open.values():
            total = total + r.charge
        return total

    def refusal(self, ask: Charge, purpose: str, basis: Mapping[ResourceName, str] | None = None) -> BudgetStop | None:
        """The first budget (RESOURCES order) that spent + open reservations + `ask` would break, or
        None when the work fits. `purpose` names the work in the detail ("the next attempt");
        `basis` says per resource how its amount was reckoned ("worst case", "expected: the mean
        attempt so far"). A budget already spent is refused as spent, not as a forecast."""
        for resource in RESOURCES:
            stop = self._check(resource, ask, purpose, (basis or {}).get(resource.name, ""))
            if stop is not None:
                return stop
        return None

    def _check(self, r: Resource, ask: Charge, purpose: str, basis: str) -> BudgetStop | None:
        limit, spent, asked = self.limits.get(r.name, 0), self.spent[r.name], ask[r.name]
        held = [(h.purpose or h.key, h.charge[r.name]) for h in self.open.values() if h.charge[r.name]]
        total = spent + sum(a for _, a in held) + asked
        if not r.over(total, limit):
            return None
        if spent >= limit:
            return BudgetStop(r.budget, f"{r.budget} = {r.fmt(limit)} is spent ({r.fmt(spent)} used)")
        parts = [f"{r.fmt(spent)} used", f"{r.num(asked)} for {purpose}" + (f" ({basis})" if basis else "")]
        parts += [f"{r.num(a)} reserved for {p}" for p, a in held]
        verb = "reach" if r.reaching else "exceed"
        return BudgetStop(r.budget, (
            f"forecast, not spent: {' + '.join(parts)} = {r.num(total)}, which would {verb} {r.budget} = "
            f"{r.fmt(limit)}; {r.num(limit - spent)} left unused"), forecast=True)

    def reserve(self, key: str, ask: Charge, purpose: str,
                basis: Mapping[ResourceName, str] | None = None) -> Reservation | BudgetStop:
        """Hold `ask` under `key` and return the reservation, or the BudgetStop it would cause
        (nothing held). Raises ValueError when `key` already holds a reservation."""
        if key in self.open:
            raise ValueError(f"a reservation for {key} is already open")
        stop = self.refusal(ask, purpose, basis)
        if stop is not None:
            return stop
        reservation = Reservation(key, ask, purpose)
        self.open[key] = reservation
        return reservation

    def settle(self, key: str, actual: Charge | None) -> Settlement:
        """Close the reservation `key`, charging `actual` (None: the charge it held, for work whose
        use is unknown). Returns the settlement to record. Raises KeyError when `key` is not open."""
        reservation = self.open.pop(key)
        charged = reservation.charge if actual is None else actual
        self.spent = self.spent + charged
        return Settlement(key, charged)

    @classmethod
    def replay(cls, limits: Mapping[ResourceName, float], records: Iterable[Reservation | Settlement]) -> Account:
        """Rebuild from a ledger: its reservations and settlements in ledger order. A reservation
        never settled (the kernel was killed during the work) stays open, so its charge stays held:
        a resume never spends beyond a limit."""
        account = cls(limits)
        for record in records:
            if isinstance(record, Reservation):
                account.open[record.key] = record
            else:
                account.open.pop(record.key, None)
                account.spent = account.spent + record.charge
        return account


def standing(limits: Mapping[ResourceName, float], spent: Charge) -> dict[str, dict[str, float | str]]:
    """Each limited budget's standing, in RESOURCES order: {budget name: {"used", "limit", "left",
    "unit"}} ("left" never below 0); unlimited budgets are left out. What an agent may read."""
    return {r.budget: {"used": spent[r.name], "limit": limits[r.name], "left": max(0, limits[r.name] - spent[r.name]),
                       "unit": r.unit}
            for r in RESOURCES if limits.get(r.name)}


def recorded_limits(contract: Contract) -> dict[str, float]:
    """The run's limits as `run.started.data.limits` records them: {contract attribute: limit}
    (max_wall in seconds as `max_wall_s`)."""
    b = contract.budget
    return {r.attribute: getattr(b, r.attribute) for r in RESOURCES}
