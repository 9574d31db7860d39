"""The contract: defaults, strict validation, and errors that name the key path and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.commands.contract_file import load_contract
from ratchet.core.contract import parse_duration
from ratchet.core.contract_load import contract_from_bytes, parse_contract
from ratchet.core.errors import ContractError

GOOD = """\
[campaign]
name = "digits"

[target]
kind = "benchmark"
command = "python3 bench.py"
metric = "accuracy"

[scope]
allowed = ["model/", "params.toml"]
protected = ["bench.py"]

[agent]
kind = "search"
[agent.search]
file = "params.toml"
[agent.search.space]
C = { type = "float", low = 0.001, high = 1000.0, log = true }
depth = { type = "int", low = 1, high = 12 }
kernel = { type = "categorical", choices = ["rbf", "poly"] }
"""

EXAMPLES = """\
[campaign]
name = "ex"

[target]
kind = "examples"
examples = "data/examples.jsonl"
solution = "solution.py"

[[target.checks]]
type = "exact_match"

[scope]
allowed = ["solution.py"]

[agent]
kind = "files"
[agent.files]
path = "candidates/"
"""


def test_defaults_match_design():
    c = parse_contract(GOOD)
    assert c.campaign.seed == 0
    assert c.target.direction == "max" and c.target.seed_env == "RATCHET_SEED"
    assert c.target.timeout_s == 600 and c.target.cache is True
    assert c.gate.alpha == 0.05 and c.gate.multiplicity == "campaign"
    assert list(c.gate.units) == [10, 20, 40] and c.gate.confirm is True
    assert c.gate.holdout_size == 40 and c.gate.patience == 0 and c.gate.target is None
    assert c.budget.max_attempts == 20 and c.budget.max_wall_s == 0.0
    assert c.compute.backend == "local" and c.compute.max_parallel == 2
    assert c.sandbox.mode == "auto" and c.sandbox.network is False
    assert c.agent.search.sampler == "tpe"
    assert "ratchet.toml" in c.protected_paths


def test_examples_contract_and_its_protection():
    c = parse_contract(EXAMPLES)
    assert list(c.target.split) == [0.6, 0.2, 0.2]
    assert "data/examples.jsonl" in c.protected_paths and "data/examples.jsonl" in c.hidden_paths


def test_seed_zero_is_valid_and_large_seed_too():
    assert parse_contract(GOOD.replace('name = "digits"', 'name = "d"\nseed = 0')).campaign.seed == 0
    assert parse_contract(GOOD.replace('name = "digits"', 'name = "d"\nseed = 123456789012')).campaign.seed > 0


@pytest.mark.parametrize(
    "value, seconds", [(90, 90.0), ("90", 90.0), ("90s", 90.0), ("45m", 2700.0), ("2h", 7200.0), ("0", 0.0)]
)
def test_durations(value, seconds):
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", [float("nan"), -1, "-5m", "soon", True])
def test_a_duration_that_is_no_number_of_seconds_is_refused(value):
    with pytest.raises(ValueError):
        parse_duration(value)


def _replace(old: str, new: str, base: str = GOOD) -> str:
    assert old in base, old
    return base.replace(old, new, 1)


# (document, expected code, key path that must appear in the message)
BAD = [
    (_replace('name = "digits"', 'name = "bad name!"'), "contract.invalid", "campaign.name"),
    (_replace('name = "digits"', 'name = "' + "x" * 65 + '"'), "contract.invalid", "campaign.name"),
    (_replace('name = "digits"', 'name = "d"\nseed = -1'), "contract.invalid", "campaign.seed"),
    (_replace('name = "digits"', 'name = "d"\nseed = "0"'), "contract.invalid", "campaign.seed"),
    (_replace('[campaign]\nname = "digits"\n', "[campaign]\n"), "contract.missing_key", "campaign.name"),
    (_replace('kind = "benchmark"', 'kind = "bench"'), "contract.invalid", "target.kind"),
    (_replace('metric = "accuracy"\n', ""), "contract.invalid", "target.metric"),
    (_replace('command = "python3 bench.py"\n', ""), "contract.invalid", "target.command"),
    (_replace('metric = "accuracy"', 'metric = "a"\nexamples = "d.jsonl"'), "contract.invalid", "target.examples"),
    (_replace('metric = "accuracy"', 'metric = "a"\ndirection = "up"'), "contract.invalid", "target.direction"),
    (_replace('metric = "accuracy"', 'metric = "a"\nseed_env = "PATH"'), "contract.invalid", "target.seed_env"),
    (_replace('metric = "accuracy"', 'metric = "a"\nseed_env = "LD_PRELOAD"'), "contract.invalid", "target.seed_env"),
    (_replace('metric = "accuracy"', 'metric = "a"\nseed_env = "PYTHONPATH"'), "contract.invalid", "target.seed_env"),
    (_replace('metric = "accuracy"', 'metric = "a"\nseed_env = "RATCHET_UNIT"'), "contract.invalid", "target.seed_env"),
    (_replace('metric = "accuracy"', 'metric = "a"\ntimeout_s = 0'), "contract.invalid", "target.timeout_s"),
    (GOOD + "[gate]\nalpah = 0.1\n", "contract.unknown_key", "gate.alpah"),
    (GOOD + "[gate]\nalpha = 0.0\n", "contract.invalid", "gate.alpha"),
    (GOOD + "[gate]\nalpha = 0.7\n", "contract.invalid", "gate.alpha"),
    (GOOD + '[gate]\nmultiplicity = "none"\n', "contract.invalid", "gate.multiplicity"),
    (GOOD + "[gate]\nunits = []\n", "contract.invalid", "gate.units"),
    (GOOD + "[gate]\nunits = [10, 10]\n", "contract.invalid", "gate.units"),
    (GOOD + "[gate]\nunits = [0, 10]\n", "contract.invalid", "gate.units"),
    (GOOD + "[gate]\nmin_effect = -0.1\n", "contract.invalid", "gate.min_effect"),
    (GOOD + "[gate]\nmin_effect_rel = -1\n", "contract.invalid", "gate.min_effect_rel"),
    (GOOD + "[budget]\nmax_attempts = 0\n", "contract.invalid", "budget.max_attempts"),
    (GOOD + "[budget]\nmax_evaluations = -5\n", "contract.invalid", "budget.max_evaluations"),
    (GOOD + '[budget]\nmax_wall = "3 days"\n', "contract.invalid", "budget.max_wall"),
    (GOOD + "[budget]\nmax_cpu_hours = -1.0\n", "contract.invalid", "budget.max_cpu_hours"),
    (GOOD + "[compute]\nmax_parallel = 0\n", "contract.invalid", "compute.max_parallel"),
    (GOOD + '[compute]\nbackend = "k8s"\n', "contract.invalid", "compute.backend"),
    (GOOD + "[compute]\ngpus = [0, 0]\n", "contract.invalid", "compute.gpus"),
    (GOOD + "[compute]\nmax_concurrent_gpus = -1\n", "contract.invalid", "compute.max_concurrent_gpus"),
    (GOOD + "[compute]\ncpus_per_job = 0\n", "contract.invalid", "compute.cpus_per_job"),
    (GOOD + "[compute.slurm]\npoll_min_s = 5.0\npoll_max_s = 1.0\n", "contract.invalid", "compute.slurm"),
    (GOOD + "[compute.slurm]\nextra_args = \"--qos=x\"\n", "contract.invalid", "compute.slurm.extra_args"),
    (GOOD + "[compute.slurm]\npartiton = \"gpu\"\n", "contract.unknown_key", "compute.slurm.partiton"),
    (_replace('metric = "accuracy"', 'metric = "a"\nseed_env = "CUDA_VISIBLE_DEVICES"'), "contract.invalid",
     "target.seed_env"),
    (GOOD + '[sandbox]\nmode = "docker"\n', "contract.invalid", "sandbox.mode"),
    (GOOD + "[sandbox]\nnetwork = 1\n", "contract.invalid", "sandbox.network"),
    (GOOD + "[extra]\nx = 1\n", "contract.unknown_key", "extra"),
    (_replace('allowed = ["model/", "params.toml"]', 'allowed = ["/etc/passwd"]'), "contract.invalid", "scope.allowed"),
    (_replace('allowed = ["model/", "params.toml"]', 'allowed = ["../up"]'), "contract.invalid", "scope.allowed"),
    (_replace('allowed = ["model/", "params.toml"]', 'allowed = ["src/*.py"]'), "contract.invalid", "scope.allowed"),
    (_replace('allowed = ["model/", "params.toml"]', 'allowed = [".git/hooks"]'), "contract.invalid", "scope.allowed"),
    (_replace('allowed = ["model/", "params.toml"]', "allowed = []"), "contract.invalid", "scope.allowed"),
    (_replace('allowed = ["model/", "params.toml"]', 'allowed = ["ratchet.toml"]'), "contract.invalid", "scope"),
    (_replace('protected = ["bench.py"]', 'protected = ["model/x.py"]'), "contract.invalid", "scope"),
    (_replace('kind = "search"', 'kind = "magic"'), "contract.invalid", "agent.kind"),
    (_replace('kind = "search"', 'kind = "files"'), "contract.invalid", "agent"),
    (_replace('file = "params.toml"', 'file = "params.yaml"'), "contract.invalid", "agent.search.file"),
    (_replace("low = 0.001, high = 1000.0", "low = 5.0, high = 1.0"), "contract.invalid", "agent.search.space.C"),
    (_replace("low = 0.001, high = 1000.0", "low = 0.0, high = 1.0"), "contract.invalid", "agent.search.space.C"),
    (_replace("low = 1, high = 12", "low = 3, high = 3"), "contract.invalid", "agent.search.space.depth"),
    (_replace('choices = ["rbf", "poly"]', "choices = []"), "contract.invalid", "agent.search.space.kernel"),
    (_replace('{ type = "int", low = 1', '{ type = "integer", low = 1'), "contract.invalid",
     "agent.search.space.depth"),
    (_replace('[agent.search.space]\n', '[agent.search.space]\n', GOOD).split("[agent.search.space]")[0]
     + "[agent.search.space]\n", "contract.invalid", "agent.search.space"),
    (EXAMPLES.replace('[[target.checks]]\ntype = "exact_match"\n', ""), "contract.invalid", "target"),
    (EXAMPLES.replace('type = "exact_match"', 'type = "fuzzy"'), "contract.invalid", "target.checks[0]"),
    (EXAMPLES.replace('type = "exact_match"', 'type = "regex_match"\npattern = "(unclosed"'),
     "contract.invalid", "target.checks[0].pattern"),
    (EXAMPLES.replace('type = "exact_match"', 'type = "numeric_tolerance"\natol = -1'),
     "contract.invalid", "target.checks[0].atol"),
    (EXAMPLES.replace('type = "exact_match"', 'type = "exact_match"\n[[target.checks]]\ntype = "exact_match"\n'
                      '[[target.checks]]\ntype = "custom"'), "contract.missing_key", "target.checks[2].script"),
    (EXAMPLES.replace('solution = "solution.py"', 'solution = "s.py"\nsplit = [0.5, 0.5, 0.5]'),
     "contract.invalid", "target.split"),
    (EXAMPLES.replace('solution = "solution.py"', 'solution = "s.py"\nsplit = [0.8, 0.2, 0.0]'),
     "contract.invalid", "target.split"),
    (EXAMPLES.replace('solution = "solution.py"', 'solution = "s.py"\ncommand = "x"'), "contract.invalid",
     "target.command"),
    (EXAMPLES.replace('allowed = ["solution.py"]', 'allowed = ["data/"]'), "contract.invalid", "target.examples"),
    ("[campaign\nname = 1", "contract.toml", "line 1"),
    ("name = ", "contract.toml", "end of document"),
]


@pytest.mark.parametrize("document, code, key", BAD, ids=[f"bad{i:02d}" for i in range(len(BAD))])
def test_bad_contract_names_key_and_code(document, code, key):
    with pytest.raises(ContractError) as info:
        parse_contract(document)
    assert info.value.code == code
    assert key in info.value.message, info.value.message
    assert info.value.exit_code == 2


def test_error_gives_the_line_of_the_key():
    doc = GOOD + "[gate]\nalpha = 0.9\n"
    with pytest.raises(ContractError) as info:
        parse_contract(doc, source="ratchet.toml")
    line = doc.splitlines().index("alpha = 0.9") + 1
    assert f"ratchet.toml:{line}:" in info.value.message


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(ContractError) as info:
        parse_contract(GOOD + "[gate]\nalpah = 0.1\n")
    assert info.value.hint and "gate.alpha" in info.value.hint


def test_missing_allowed_path_is_a_warning_not_an_error(tmp_path: Path):
    (tmp_path / "ratchet.toml").write_text(GOOD)
    loaded = load_contract(tmp_path)
    assert any("model/" in w for w in loaded.warnings)
    (tmp_path / "model").mkdir()
    (tmp_path / "params.toml").write_text("")
    assert load_contract(tmp_path).warnings == ()


def test_a_contract_is_validated_from_its_bytes_and_asks_the_caller_which_paths_exist():
    asked: list[Path] = []

    def present(path: Path) -> bool:
        asked.append(path)
        return path.name == "model"

    root = Path("/no/such/project")
    loaded = contract_from_bytes(GOOD.encode(), root / "ratchet.toml", root, present)
    assert asked == [root / "model", root / "params.toml"]
    assert loaded.warnings == (f"scope.allowed entry 'params.toml' does not exist in {root} (yet)",)
    assert loaded.text == GOOD and loaded.digest.startswith("sha256:") and loaded.contract.campaign.name == "digits"
    with pytest.raises(ContractError) as info:
        contract_from_bytes(b"\xff\xfe[campaign]", root / "ratchet.toml", root, present)
    assert info.value.code == "contract.unreadable"


def test_missing_contract_file(tmp_path: Path):
    with pytest.raises(ContractError) as info:
        load_contract(tmp_path)
    assert info.value.code == "contract.missing"


def test_not_utf8(tmp_path: Path):
    (tmp_path / "ratchet.toml").write_bytes(b"\xff\xfe[campaign]")
    with pytest.raises(ContractError) as info:
        load_contract(tmp_path)
    assert info.value.code == "contract.unreadable"


def test_settings_the_build_cannot_run_validate():
    # Known to the schema: they load; `ratchet run` refuses them (tests/test_cli.py).
    c = parse_contract(GOOD + '[compute]\nbackend = "slurm"\n')
    assert c.compute.backend == "slurm"
    c = parse_contract(_replace('kind = "search"', 'kind = "command"') + '[agent.command]\ncommand = "my-agent"\n')
    assert c.agent.kind == "command"


def test_slurm_and_gpu_settings():
    c = parse_contract(
        GOOD + '[compute]\nbackend = "slurm"\ngpus_per_job = 2\ngpus = [0, "GPU-1a2b"]\nmax_concurrent_gpus = 4\n'
        '[compute.slurm]\npartition = "gpu"\naccount = "lab"\nqos = "short"\nextra_args = ["--constraint=a100"]\n'
        "time_grace_s = 30\npoll_max_s = 5.0\n"
    )
    assert c.compute.gpu_devices == ("0", "GPU-1a2b")
    assert (c.compute.cpus_per_job, c.compute.memory_mb_per_job) == (1, 0)
    assert c.compute.max_concurrent_gpus == 4
    s = c.compute.slurm
    assert (s.partition, s.account, s.qos, s.extra_args) == ("gpu", "lab", "short", ["--constraint=a100"])
    assert (s.time_grace_s, s.poll_min_s, s.poll_max_s, s.python) == (30.0, 0.5, 5.0, None)
    assert parse_contract(GOOD).compute.slurm.partition is None
