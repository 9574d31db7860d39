"""Compute: where a job runs and how it is held to its limits.

`base.py` (the executor protocol: JobSpec, JobResult; pure), `factory.py` (a contract's `[compute]`
to an executor), `local.py` (the local process pool) with `job_process.py` (one job's process),
`streams.py` (its capped output and stdin), `outcome.py` (its end as a JobResult), `artifacts.py`
(the files a job declared, copied back once it ended), `pids.py`,
`reaper.py` and `cgroup.py` (every process of a job kept in reach and killed), `sandbox.py`
(bubblewrap) with `programs.py` (where a command's program and its install prefix are, for the sandbox
to bind), `job_programs.py` (a job's `python3` and the command's program as the user's PATH finds them,
and the prefixes a sandboxed job binds for them), `env.py` (a job's environment), `gpus.py` (GPU devices),
`slurm.py` (the Slurm executor: waits on job arrays, re-attaches, cancels) with `slurm_arrays.py`
(submitting an array: job directories, the wrapper, sbatch), `slurm_calls.py` (the scheduler's
commands, counted, and what they read of the cluster; the run's token), `slurm_tasks.py` (a task's
files and record read into its result), `slurm_states.py` (what Slurm says, pure) and
`slurm_task.py` (the wrapper a Slurm task runs),
`cache.py` (the measurement cache), `in_kernel.py` (jobs that are the kernel's own work, not processes: a
prompt solution's model calls).

Effects: starts, supervises and kills processes (locally, or through sbatch / scontrol / scancel);
writes job directories and the cache under `.ratchet/`; creates cgroups.
"""
