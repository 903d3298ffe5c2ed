"""Monte-Carlo campaigns over an envelope of initial-contact conditions, independent of the physics.

A campaign samples an :class:`Envelope` (the ranges of the initial-contact conditions), runs a
case function over the samples on all local cores or on Dask, and turns the results into a table,
summary statistics and plots::

    env = Envelope.from_dict(toml["envelope"])
    x = sample(env)                                  # (cases, variables), deterministic
    results = run(docking_cases, x)                  # list of dicts, sorted by case id
    table = to_table(results, x, env)                # dict of columns
    write_csv(table, "campaign.csv")
    print(format_summary(summarise(table, "captured", ["peak_force"])))

The case function knows nothing of this module: ``case_fn(case_ids, samples) -> list[dict]``
evaluates a batch (``case_ids`` int array (k,), ``samples`` float array (k, d), columns in the
envelope's variable order) and returns one dict of scalar results per case. It must be a
picklable top-level function: worker processes are started with the "spawn" method, so each
worker imports the function's module afresh (cache expensive set-up, such as loading compiled
kernels, at module level or with ``functools.cache``; a script that calls :func:`run` needs the
usual ``if __name__ == "__main__":`` guard).

Sampling (:func:`sample`) uses only ``numpy.random.Generator(PCG64(seed)).random``, whose doubles
are ``(next_uint64 >> 11) * 2**-53``: the same seed gives the same samples on any machine. The
samples are drawn before any work is distributed, so case i's values never depend on the number
of workers or the scheduler.

Failures never abort a campaign and never drop a case (:func:`run`): a chunk whose call raises,
returns malformed results, or whose worker process dies is re-run case by case; a case that still
fails is recorded as ``{"case": id, "status": "error", "error": "<type>: <message>"}``.
"""

from __future__ import annotations

import csv
import logging
import math
import multiprocessing
import os
import pickle
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import wait
from numbers import Real
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

METHODS = ("uniform", "normal", "lhs")
ENVELOPE_KEYS = ("method", "cases", "seed", "variables")
VARIABLE_KEYS = ("low", "high", "mean", "std", "unit")
RESERVED_COLUMNS = ("case", "status", "error")
MAX_CHUNK = 1000

CaseFn = Callable[[np.ndarray, np.ndarray], list]
Task = tuple[np.ndarray, np.ndarray]            # (case ids (k,), samples (k, d))
Outcome = tuple[bool, Any]                     # (True, [result dicts]) or (False, "Type: msg")


# ---------------------------------------------------------------------------------------------
# Envelope
# ---------------------------------------------------------------------------------------------

class EnvelopeError(ValueError):
    """An invalid envelope. The message starts with the path of the offending field, e.g.
    ``envelope.variables.lateral: low 0.2 > high 0.1``."""


@dataclass(frozen=True)
class Variable:
    """One sampled variable: uniform (and Latin-hypercube) range ``[low, high]``; ``mean`` and
    ``std`` (both or neither) are used by the "normal" method only, as a normal distribution
    truncated to ``[low, high]``."""

    name: str
    low: float
    high: float
    mean: float | None = None
    std: float | None = None
    unit: str = ""

    def __post_init__(self) -> None:
        path = f"envelope.variables.{self.name}"
        if not isinstance(self.name, str) or not self.name:
            raise EnvelopeError(f"envelope.variables: a variable name must be a non-empty "
                                f"string, got {self.name!r}")
        if self.name in RESERVED_COLUMNS:
            raise EnvelopeError(f"{path}: the name {self.name!r} is reserved for a result "
                                f"column ({', '.join(RESERVED_COLUMNS)})")
        for field in ("low", "high", "mean", "std"):
            value = getattr(self, field)
            if value is not None or field in ("low", "high"):
                object.__setattr__(self, field, _number(value, f"{path}.{field}"))
        if not isinstance(self.unit, str):
            raise EnvelopeError(f"{path}.unit: expected a string, got {self.unit!r}")
        if self.low > self.high:
            raise EnvelopeError(f"{path}: low {self.low!r} > high {self.high!r}")
        self._check_normal(path)

    def _check_normal(self, path: str) -> None:
        if (self.mean is None) != (self.std is None):
            given, missing = ("mean", "std") if self.std is None else ("std", "mean")
            raise EnvelopeError(f"{path}.{missing}: missing ({given} is given; the normal "
                                f"distribution needs both mean and std)")
        if self.std is not None and self.std <= 0.0:
            raise EnvelopeError(f"{path}.std: must be > 0, got {self.std!r}")
        if self.mean is not None and not self.low <= self.mean <= self.high:
            raise EnvelopeError(f"{path}.mean: {self.mean!r} is outside "
                                f"[low, high] = [{self.low!r}, {self.high!r}]")


@dataclass(frozen=True)
class Envelope:
    """The ordered variables of a campaign and how to sample them: ``method`` one of
    "uniform", "normal", "lhs" (Latin hypercube); ``cases`` the default sample size; ``seed``
    the default seed (a non-negative int)."""

    variables: tuple[Variable, ...]
    method: str = "lhs"
    cases: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", tuple(self.variables))
        if self.method not in METHODS:
            raise EnvelopeError(f"envelope.method: unknown method {self.method!r} "
                                f"(one of {', '.join(METHODS)})")
        _check_count(self.cases, "envelope.cases", EnvelopeError)
        _check_seed(self.seed, "envelope.seed", EnvelopeError)
        self._check_variables()

    def _check_variables(self) -> None:
        if not self.variables:
            raise EnvelopeError("envelope.variables: at least one variable is needed")
        seen = set()
        for v in self.variables:
            if not isinstance(v, Variable):
                raise EnvelopeError(f"envelope.variables: expected Variable, got {v!r}")
            if v.name in seen:
                raise EnvelopeError(f"envelope.variables.{v.name}: duplicate variable")
            seen.add(v.name)
            if self.method == "normal" and v.mean is None:
                raise EnvelopeError(f"envelope.variables.{v.name}: method 'normal' needs "
                                    f"mean and std")

    @property
    def names(self) -> list[str]:
        """The variable names, in sample-column order."""
        return [v.name for v in self.variables]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Envelope:
        """An envelope from a plain dict as read from TOML::

            {"method": "lhs", "cases": 300, "seed": 1,
             "variables": {"lateral": {"low": 0.0, "high": 0.16, "unit": "m"}, ...}}

        ``variables`` is required and keeps its order; ``method`` defaults to "lhs", ``cases``
        to 100, ``seed`` to 0. Raises :class:`EnvelopeError` naming the field."""
        if not isinstance(data, Mapping):
            raise EnvelopeError(f"envelope: expected a table, got {type(data).__name__}")
        _check_keys(data, ENVELOPE_KEYS, "envelope")
        if "variables" not in data:
            raise EnvelopeError("envelope.variables: missing (a table of variables is needed)")
        variables = data["variables"]
        if not isinstance(variables, Mapping):
            raise EnvelopeError(f"envelope.variables: expected a table, got "
                                f"{type(variables).__name__}")
        return cls(variables=tuple(_variable_from_dict(name, spec)
                                   for name, spec in variables.items()),
                   method=data.get("method", "lhs"), cases=data.get("cases", 100),
                   seed=data.get("seed", 0))


def _variable_from_dict(name: Any, spec: Any) -> Variable:
    path = f"envelope.variables.{name}"
    if not isinstance(spec, Mapping):
        raise EnvelopeError(f"{path}: expected a table with low and high, got "
                            f"{type(spec).__name__}")
    _check_keys(spec, VARIABLE_KEYS, path)
    for field in ("low", "high"):
        if field not in spec:
            raise EnvelopeError(f"{path}.{field}: missing (every variable needs low and high)")
    return Variable(name=name, low=spec["low"], high=spec["high"], mean=spec.get("mean"),
                    std=spec.get("std"), unit=spec.get("unit", ""))


def _check_keys(data: Mapping, allowed: Sequence[str], path: str) -> None:
    for key in data:
        if key not in allowed:
            raise EnvelopeError(f"{path}.{key}: unknown key (allowed: {', '.join(allowed)})")


def _number(value: Any, path: str) -> float:
    """A finite real number (not a bool, not a string) as a float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
        raise EnvelopeError(f"{path}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise EnvelopeError(f"{path}: must be finite, got {value!r}")
    return float(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_count(value: Any, path: str, error: type[ValueError] = ValueError) -> int:
    if not _is_int(value) or value < 1:
        raise error(f"{path}: must be an integer >= 1, got {value!r}")
    return int(value)


def _check_seed(value: Any, path: str, error: type[ValueError] = ValueError) -> int:
    if not _is_int(value) or value < 0:
        raise error(f"{path}: must be a non-negative integer, got {value!r}")
    return int(value)


# ---------------------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------------------

def sample(envelope: Envelope, n: int | None = None, seed: int | None = None) -> np.ndarray:
    """``n`` samples (default ``envelope.cases``) of the envelope's variables, shape (n, d),
    columns in the envelope's order; deterministic for a ``seed`` (default ``envelope.seed``).

    The algorithm, with ``rng = numpy.random.Generator(numpy.random.PCG64(seed))`` and only
    ``rng.random`` drawn (doubles in [0, 1), identical on every machine):

    1. Unit samples ``u`` (n, d):

       - "uniform" and "normal": ``u = rng.random((n, d))``, filled row by row, so case i's
         values do not depend on ``n`` (a longer campaign extends a shorter one).
       - "lhs": for each variable j in order, ``keys = rng.random(n)``,
         ``perm = argsort(keys, kind="stable")`` (a uniformly random permutation of the n
         strata), then ``jitter = rng.random(n)`` and ``u[:, j] = (perm + jitter) / n``: case i
         falls in stratum ``perm[i]`` of variable j, uniformly within it, so every variable has
         exactly one case in each of its n equal strata.

    2. Values: "uniform" and "lhs": ``low + u * (high - low)``. "normal": the inverse CDF of the
       normal (mean, std) truncated to [low, high], ``mean + std * ndtri(Fa + u * (Fb - Fa))``
       with ``Fa = ndtr((low - mean) / std)``, ``Fb = ndtr((high - mean) / std)`` (scipy.special;
       one uniform per value, no rejection, so no draw count depends on the values). Values
       are clipped to [low, high] against rounding.
    """
    n = envelope.cases if n is None else _check_count(n, "sample: n")
    seed = envelope.seed if seed is None else _check_seed(seed, "sample: seed")
    rng = np.random.Generator(np.random.PCG64(seed))
    d = len(envelope.variables)
    u = _latin_hypercube(rng, n, d) if envelope.method == "lhs" else rng.random((n, d))
    columns = [_from_unit(v, u[:, j], envelope.method) for j, v in enumerate(envelope.variables)]
    return np.column_stack(columns)


def _latin_hypercube(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """Unit Latin-hypercube samples (n, d): per variable, a random permutation of the strata
    (argsort of uniform keys) and a uniform position within each stratum."""
    u = np.empty((n, d))
    for j in range(d):
        strata = np.argsort(rng.random(n), kind="stable")
        u[:, j] = (strata + rng.random(n)) / n
    return u


def _from_unit(v: Variable, u: np.ndarray, method: str) -> np.ndarray:
    if method == "normal":
        x = _truncated_normal_ppf(v, u)
    else:
        x = v.low + u * (v.high - v.low)
    return np.clip(x, v.low, v.high)


def _truncated_normal_ppf(v: Variable, u: np.ndarray) -> np.ndarray:
    """Inverse CDF of the normal (v.mean, v.std) truncated to [v.low, v.high] at ``u``."""
    from scipy.special import ndtr, ndtri

    fa = ndtr((v.low - v.mean) / v.std)
    fb = ndtr((v.high - v.mean) / v.std)
    return v.mean + v.std * ndtri(fa + u * (fb - fa))


# ---------------------------------------------------------------------------------------------
# Runner
# ---------------------------------------------------------------------------------------------

def run(case_fn: CaseFn, samples: np.ndarray, *, workers: int | None = None,
        scheduler: Any = None, chunk: int | None = None, progress: bool = True) -> list[dict]:
    """Evaluate every case (row of ``samples``; case id = row index) with ``case_fn`` and return
    one result dict per case, sorted by case id, each with ``case`` (the id) and ``status``
    ("ok" unless the case function set it).

    ``case_fn(case_ids, samples) -> list[dict]`` gets chunks of consecutive cases (``chunk``
    cases each; default: about four chunks per worker, at most 1000 cases) and returns one dict
    of scalars (number, bool, str or None) per case.

    Where: ``scheduler=None``: ``workers`` local processes (default: all usable cores), each
    evaluating one chunk at a time; ``workers=1`` runs in this process (no pool, and no
    protection against a case that kills the process). ``scheduler="local"``: a
    dask.distributed ``LocalCluster(n_workers=workers, threads_per_worker=1)`` made for this
    run; a string: the address of a running Dask scheduler; or a ``dask.distributed.Client``
    (for these two, ``workers`` is ignored: the cluster's threads are the workers).

    The results are identical whatever the workers, chunk size or scheduler (the samples are
    fixed beforehand). A chunk that raises, returns malformed results, or whose worker dies is
    re-run case by case; a case that still fails becomes ``{"case": id, "status": "error",
    "error": "<type>: <message>"}`` (a dead local worker: ``"WorkerDied: ..."``; on Dask,
    after the scheduler's own retries: ``"KilledWorker: ..."``).

    Progress (cases done / total, rate, ETA) goes to stderr when ``progress``: a ``\\r``-updated
    line on a terminal, otherwise a line every 10%.
    """
    samples = _as_samples(samples)
    n = len(samples)
    if chunk is not None:
        chunk = _check_count(chunk, "run: chunk")
    collector = _Collector(n, _Progress(n, progress))
    if scheduler is None:
        workers = _local_workers(workers)
        tasks = _chunks(samples, chunk or _default_chunk(n, workers))
        if workers == 1:
            _run_inline(case_fn, tasks, collector)
        else:
            _check_picklable(case_fn)
            _run_processes(case_fn, tasks, workers, collector)
    else:
        _check_picklable(case_fn)
        _run_dask(case_fn, samples, scheduler, workers, chunk, collector)
    collector.progress.close()
    return [collector.results[i] for i in range(n)]


def _as_samples(samples: Any) -> np.ndarray:
    x = np.asarray(samples, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"run: samples must be a 2-D array (cases, variables), got shape "
                         f"{x.shape}")
    return x


def _local_workers(workers: int | None) -> int:
    if workers is None:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    return _check_count(workers, "run: workers")


def _default_chunk(n: int, workers: int) -> int:
    """About four chunks per worker (load balance) and at least 20 chunks (progress), at most
    :data:`MAX_CHUNK` cases."""
    return max(1, min(MAX_CHUNK, math.ceil(n / max(4 * workers, 20))))


def _chunks(samples: np.ndarray, size: int) -> list[Task]:
    ids = np.arange(len(samples), dtype=np.int64)
    return [(ids[i:i + size].copy(), samples[i:i + size].copy())
            for i in range(0, len(samples), size)]


def _check_picklable(case_fn: CaseFn) -> None:
    try:
        pickle.dumps(case_fn)
    except Exception as exc:
        raise TypeError(f"run: case_fn must be picklable (a function defined at the top level "
                        f"of an importable module) to run in worker processes: "
                        f"{type(exc).__name__}: {exc}") from exc


def _evaluate(case_fn: CaseFn, ids: np.ndarray, x: np.ndarray) -> Outcome:
    """Run one chunk: (True, checked result dicts) or (False, "<type>: <message>")."""
    try:
        return True, _check_results(case_fn(ids, x), ids)
    except Exception as exc:
        return False, _describe(exc)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _check_results(out: Any, ids: np.ndarray) -> list[dict]:
    if not isinstance(out, (list, tuple)) or len(out) != len(ids):
        got = f"{len(out)} results" if isinstance(out, (list, tuple)) else type(out).__name__
        raise ValueError(f"case_fn returned {got} for {len(ids)} cases (expected a list of "
                         f"{len(ids)} dicts)")
    return [_check_result(r, int(i)) for r, i in zip(out, ids)]


def _check_result(result: Any, case: int) -> dict:
    """``{"case": case, **fields, "status": ...}`` with every value a plain Python scalar."""
    if not isinstance(result, Mapping):
        raise TypeError(f"case_fn result of case {case} is a {type(result).__name__}, not a "
                        f"dict")
    fields: dict[str, Any] = {"case": case}
    for key, value in result.items():
        if not isinstance(key, str):
            raise TypeError(f"case_fn result of case {case} has a non-string key {key!r}")
        if key != "case":
            fields[key] = _scalar(value, key, case)
    fields.setdefault("status", "ok")
    return fields


def _scalar(value: Any, key: str, case: int) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"case_fn result field {key!r} of case {case} is a {type(value).__name__}, "
                    f"not a scalar")


class _Collector:
    """Gathers outcomes: keeps a chunk's results, splits a failed chunk into single cases, and
    records a failed single case as an error."""

    def __init__(self, n: int, progress: _Progress) -> None:
        self.results: dict[int, dict] = {}
        self.progress = progress

    def finish(self, task: Task, outcome: Outcome) -> list[Task]:
        """Record ``outcome`` of ``task``; return the tasks to run next (its single cases if
        a chunk of several cases failed)."""
        ids, x = task
        ok, value = outcome
        if ok:
            for result in value:
                self.results[result["case"]] = result
        elif len(ids) > 1:
            return [(ids[i:i + 1], x[i:i + 1]) for i in range(len(ids))]
        else:
            case = int(ids[0])
            self.results[case] = {"case": case, "status": "error", "error": value}
        self.progress.advance(len(ids))
        return []


def _run_inline(case_fn: CaseFn, tasks: list[Task], collector: _Collector) -> None:
    queue = deque(tasks)
    while queue:
        task = queue.popleft()
        queue.extend(collector.finish(task, _evaluate(case_fn, *task)))


# --- local worker processes ------------------------------------------------------------------

class WorkerStartError(RuntimeError):
    """A worker process could not start or could not load the case function."""


def _worker_main(conn: Any) -> None:
    """A worker process: receive the case function, then evaluate tasks one at a time until
    told to stop (None) or the pipe closes. Ctrl-C is left to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        case_fn = conn.recv()
    except Exception as exc:
        conn.send((False, _describe(exc)))
        return
    conn.send((True, "ready"))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        conn.send(_evaluate(case_fn, *task))


class _Worker:
    """One spawned worker process and the task it is evaluating (None when idle). Knowing each
    worker's task is what lets a dead worker's case be named exactly."""

    def __init__(self, ctx: Any, case_fn: CaseFn) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child,), daemon=True,
                                   name="campaign-worker")
        self.process.start()
        child.close()
        self.conn.send(case_fn)
        self.task: Task | None = None

    def wait_ready(self) -> None:
        try:
            ok, message = self.conn.recv()
        except (EOFError, OSError):
            self.process.join()
            ok, message = False, _death(self.process.exitcode)
        if not ok:
            raise WorkerStartError(f"run: a worker process could not load case_fn ({message}); "
                                   f"is its module importable in a fresh interpreter?")

    def send(self, task: Task) -> None:
        self.task = task
        try:
            self.conn.send(task)
        except OSError:
            pass                        # the worker died; receive() reports it

    def receive(self) -> Outcome:
        """The outcome of the current task (the worker is ready or dead)."""
        self.task = None
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.process.join()
            return False, _death(self.process.exitcode)

    def handles(self) -> list:
        return [self.conn, self.process.sentinel]

    def stop(self) -> None:
        """End the process: ask an idle one to stop, terminate a busy one (an interrupted
        campaign does not wait for its running cases)."""
        if self.task is not None:
            self.process.terminate()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
        self.conn.close()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"was killed by signal {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"was killed by signal {-exitcode}"
    else:
        how = f"exited with code {exitcode}"
    return f"WorkerDied: the worker process {how}"


def _run_processes(case_fn: CaseFn, tasks: list[Task], workers: int,
                   collector: _Collector) -> None:
    """Evaluate ``tasks`` on ``workers`` spawned processes, one task per process at a time; a
    dead process is replaced by a new one when there is more work."""
    ctx = multiprocessing.get_context("spawn")
    queue = deque(tasks)
    pool: list[_Worker] = []
    try:
        pool = [_Worker(ctx, case_fn) for _ in range(min(workers, len(queue)))]
        for worker in pool:
            worker.wait_ready()
        while True:
            busy = _dispatch(pool, queue, ctx, case_fn)
            if not busy:
                return
            ready = set(wait([h for w in busy for h in w.handles()]))
            for w in busy:
                if ready.intersection(w.handles()):
                    task = w.task
                    queue.extend(collector.finish(task, w.receive()))
    finally:
        for worker in pool:
            worker.stop()


def _dispatch(pool: list[_Worker], queue: deque, ctx: Any, case_fn: CaseFn) -> list[_Worker]:
    """Give every idle worker a task (replacing dead ones first); return the busy workers."""
    for i, worker in enumerate(pool):
        if worker.task is None and queue:
            if not worker.process.is_alive():
                worker.stop()
                pool[i] = worker = _Worker(ctx, case_fn)
                worker.wait_ready()
            worker.send(queue.popleft())
    return [w for w in pool if w.task is not None]


# --- Dask ------------------------------------------------------------------------------------

def _import_dask() -> Any:
    try:
        import dask.distributed
    except ImportError as exc:
        raise ImportError("run: scheduler= needs dask.distributed, which is not installed "
                          "(pip install 'mechgen[campaign]' or pip install 'dask[distributed]')"
                          ) from exc
    return dask.distributed


def _run_dask(case_fn: CaseFn, samples: np.ndarray, scheduler: Any, workers: int | None,
              chunk: int | None, collector: _Collector) -> None:
    distributed = _import_dask()
    client, cluster = _dask_client(distributed, scheduler, workers)
    try:
        slots = sum(client.nthreads().values()) or 1
        tasks = _chunks(samples, chunk or _default_chunk(len(samples), slots))
        pending = {}
        for task in tasks:
            pending[_submit(client, case_fn, task)] = task
        futures = distributed.as_completed(list(pending))
        for future in futures:
            task = pending.pop(future)
            try:
                outcome = future.result()
            except Exception as exc:        # KilledWorker, lost connection, ...
                outcome = (False, _describe(exc))
            future.release()
            for new in collector.finish(task, outcome):
                submitted = _submit(client, case_fn, new)
                pending[submitted] = new
                futures.add(submitted)
    finally:
        if cluster is not None:
            client.close()
            cluster.close()
        elif not isinstance(scheduler, distributed.Client):
            client.close()


def _submit(client: Any, case_fn: CaseFn, task: Task) -> Any:
    return client.submit(_evaluate, case_fn, *task, pure=False)


def _dask_client(distributed: Any, scheduler: Any, workers: int | None) -> tuple[Any, Any]:
    """(client, cluster made here or None) for ``scheduler``."""
    if isinstance(scheduler, distributed.Client):
        return scheduler, None
    if scheduler == "local":
        cluster = distributed.LocalCluster(n_workers=_local_workers(workers),
                                           threads_per_worker=1, processes=True,
                                           dashboard_address=None,
                                           silence_logs=logging.ERROR)
        return distributed.Client(cluster), cluster
    if isinstance(scheduler, str):
        return distributed.Client(scheduler), None
    raise TypeError(f"run: scheduler must be None, 'local', a scheduler address or a "
                    f"dask.distributed.Client, got {scheduler!r}")


# --- progress --------------------------------------------------------------------------------

class _Progress:
    """Cases done / total, rate and ETA on stderr: one ``\\r``-updated line on a terminal
    (redrawn at most every 0.1 s), otherwise a line at every 10% step; nothing when disabled."""

    def __init__(self, total: int, enabled: bool, stream: Any = None) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self.drawn = 0.0
        self.next_tenth = 1
        isatty = getattr(self.stream, "isatty", None)
        tty = bool(isatty and isatty())
        self.mode = "off" if not enabled or total == 0 else ("tty" if tty else "lines")

    def advance(self, k: int) -> None:
        self.done += k
        if self.mode == "tty":
            now = time.monotonic()
            if now - self.drawn >= 0.1 or self.done == self.total:
                self.drawn = now
                self.stream.write("\r" + self.line())
                self.stream.flush()
        elif self.mode == "lines" and self.done * 10 >= self.next_tenth * self.total:
            while self.done * 10 >= self.next_tenth * self.total:
                self.next_tenth += 1
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        return (f"campaign {self.done}/{self.total} cases {100 * self.done / self.total:3.0f}% "
                f"{rate:8.1f} cases/s  ETA {_clock(eta)}")

    def close(self) -> None:
        if self.mode == "tty":
            self.stream.write("\r" + self.line() + "\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    """``mm:ss``, or ``h:mm:ss`` from an hour on; ``--:--`` when unknown."""
    if not math.isfinite(seconds):
        return "--:--"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{s // 60:02d}:{s % 60:02d}"


# ---------------------------------------------------------------------------------------------
# Table
# ---------------------------------------------------------------------------------------------

def to_table(results: Sequence[Mapping], samples: np.ndarray,
             envelope: Envelope) -> dict[str, np.ndarray]:
    """The results as columns, rows sorted by case id: ``case`` (int64), the envelope's
    variables (float64, from ``samples[case]``), every other result field in order of first
    appearance, then ``status`` and ``error`` (strings, "" when absent). A field whose values
    are all numbers or bools is float64 (NaN where absent, e.g. in error rows); any other
    field is a string column ("" where absent)."""
    results = sorted(results, key=lambda r: r["case"])
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[1] != len(envelope.variables):
        raise ValueError(f"to_table: samples must have shape (cases, {len(envelope.variables)}),"
                         f" got {samples.shape}")
    cases = np.array([r["case"] for r in results], dtype=np.int64)
    table = {"case": cases}
    for j, name in enumerate(envelope.names):
        table[name] = samples[cases, j]
    for field in _result_fields(results, envelope.names):
        values = [r.get(field) for r in results]
        table[field] = _text_column(values) if field in ("status", "error") \
            else _column(values)
    return table


def _result_fields(results: Sequence[Mapping], variables: list[str]) -> list[str]:
    fields: dict[str, None] = {}
    for r in results:
        for key in r:
            if key not in RESERVED_COLUMNS:
                fields[key] = None
    for field in fields:
        if field in variables:
            raise ValueError(f"to_table: result field {field!r} has the name of an envelope "
                             f"variable")
    return [*fields, "status", "error"]


def _column(values: list) -> np.ndarray:
    present = [v for v in values if v is not None]
    if all(isinstance(v, (Real, np.bool_)) for v in present):
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
    return _text_column(values)


def _text_column(values: list) -> np.ndarray:
    return np.array(["" if v is None else str(v) for v in values], dtype=str)


def _table_length(table: Mapping[str, np.ndarray]) -> int:
    lengths = {len(column) for column in table.values()}
    if len(lengths) > 1:
        raise ValueError(f"table columns have different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 0


def write_csv(table: Mapping[str, np.ndarray], path: str | Path) -> Path:
    """Write ``table`` as CSV (header row of column names). Floats are written with Python's
    shortest round-trip repr ("nan", "inf" included), so :func:`read_csv` gives the same
    bits back."""
    path = Path(path)
    n = _table_length(table)
    columns = list(table)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(columns)
        for i in range(n):
            writer.writerow([_cell(table[c][i]) for c in columns])
    return path


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def read_csv(path: str | Path) -> dict[str, np.ndarray]:
    """A table written by :func:`write_csv`: ``case`` as int64, a column whose cells all parse
    as floats as float64, any other column as strings."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"read_csv: {path} is empty (no header row)")
    header, body = rows[0], rows[1:]
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValueError(f"read_csv: {path} line {line} has {len(row)} cells, the header "
                             f"{len(header)}")
    columns = list(zip(*body)) if body else [() for _ in header]
    return {name: _parse_column(name, list(cells)) for name, cells in zip(header, columns)}


def _parse_column(name: str, cells: list[str]) -> np.ndarray:
    if name == "case":
        return np.array([int(c) for c in cells], dtype=np.int64)
    try:
        return np.array([float(c) for c in cells], dtype=np.float64)
    except ValueError:
        return np.array(cells, dtype=str)


def write_parquet(table: Mapping[str, np.ndarray], path: str | Path) -> Path:
    """Write ``table`` as Parquet; needs pyarrow (not a dependency of mechgen)."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise ImportError("write_parquet needs pyarrow, which is not installed (pip install "
                          "pyarrow); write_csv needs nothing") from exc
    _table_length(table)
    path = Path(path)
    pyarrow.parquet.write_table(pyarrow.table({k: np.asarray(v) for k, v in table.items()}),
                                path)
    return path


# ---------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------

def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson (exact) interval of a binomial proportion, ``k`` successes in ``n``
    trials: ``(beta.ppf(a/2, k, n-k+1), beta.ppf(1-a/2, k+1, n-k))`` with ``a = 1 -
    confidence``; the lower bound is 0 when k = 0 and the upper bound 1 when k = n."""
    from scipy.stats import beta

    if not (_is_int(k) and _is_int(n) and 0 <= k <= n and n >= 1):
        raise ValueError(f"clopper_pearson: need integers 0 <= k <= n, n >= 1; got k={k!r}, "
                         f"n={n!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"clopper_pearson: confidence must be in (0, 1), got {confidence!r}")
    alpha = 1.0 - confidence
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def summarise(table: Mapping[str, np.ndarray], success: str | None = "captured",
              quantities: Sequence[str] | None = None) -> dict:
    """Summary statistics of a campaign table::

        {"cases": n rows, "errors": count, "error_cases": [ids],
         "success": {"column", "successes", "evaluated", "probability", "ci95": (low, high)},
         "quantities": {name: {"n", "p50", "p99", "max", "max_case"}}}

    ``success`` is a 0/1 (or bool) column; its probability is over the rows where it is not
    NaN (error rows are counted in ``errors``, not as failures), with the 95% Clopper-Pearson
    interval; None leaves ``"success"`` None. ``quantities`` default: every float column but
    ``case`` and ``success`` (the envelope variables included). Percentiles are
    ``numpy.percentile(values, [50, 99], method="linear")`` (linear interpolation between
    order statistics, numpy's default) over the non-NaN values; ``max_case`` is the lowest case
    id reaching the max. A quantity without any value has NaN statistics and max_case None."""
    cases = np.asarray(_column_of(table, "case"))
    status = table.get("status")
    errors = cases[np.asarray(status) == "error"] if status is not None else cases[:0]
    if quantities is None:
        quantities = [name for name, col in table.items()
                      if name not in ("case", success) and np.asarray(col).dtype.kind == "f"]
    return {
        "cases": len(cases),
        "errors": len(errors),
        "error_cases": [int(c) for c in errors],
        "success": None if success is None else _success_stats(table, success),
        "quantities": {q: _quantity_stats(cases, _float_column(table, q)) for q in quantities},
    }


def _column_of(table: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    if name not in table:
        raise ValueError(f"no column {name!r} in the table (columns: {', '.join(table)})")
    return table[name]


def _float_column(table: Mapping[str, np.ndarray], name: str) -> np.ndarray:
    column = np.asarray(_column_of(table, name))
    if column.dtype.kind not in "fiub":
        raise ValueError(f"column {name!r} is not numeric (dtype {column.dtype})")
    return column.astype(np.float64)


def _success_stats(table: Mapping[str, np.ndarray], success: str) -> dict:
    values = _float_column(table, success)
    values = values[~np.isnan(values)]
    if not np.all((values == 0.0) | (values == 1.0)):
        raise ValueError(f"summarise: success column {success!r} must hold 0/1 (or bools) "
                         f"and NaN only")
    k, n = int(values.sum()), len(values)
    return {"column": success, "successes": k, "evaluated": n,
            "probability": k / n if n else float("nan"),
            "ci95": clopper_pearson(k, n) if n else (float("nan"), float("nan"))}


def _quantity_stats(cases: np.ndarray, column: np.ndarray) -> dict:
    present = ~np.isnan(column)
    values = column[present]
    if len(values) == 0:
        return {"n": 0, "p50": float("nan"), "p99": float("nan"), "max": float("nan"),
                "max_case": None}
    p50, p99 = np.percentile(values, [50, 99], method="linear")
    return {"n": len(values), "p50": float(p50), "p99": float(p99), "max": float(values.max()),
            "max_case": int(cases[present][np.argmax(values)])}


def format_summary(summary: Mapping) -> str:
    """``summary`` (from :func:`summarise`) as a few human-readable lines."""
    lines = [f"cases      {summary['cases']}"]
    errors = summary["error_cases"]
    shown = ", ".join(str(c) for c in errors[:10]) + (", ..." if len(errors) > 10 else "")
    lines.append(f"errors     {summary['errors']}" + (f"  (cases {shown})" if errors else ""))
    s = summary["success"]
    if s is not None:
        low, high = s["ci95"]
        lines.append(f"{s['column']:<10} {s['successes']}/{s['evaluated']} = "
                     f"{s['probability']:.4f}  95% CI [{low:.4f}, {high:.4f}] "
                     f"(Clopper-Pearson)")
    if summary["quantities"]:
        width = max(12, *(len(q) for q in summary["quantities"]))
        lines.append(f"{'quantity':<{width}} {'p50':>12} {'p99':>12} {'max':>12} {'max case':>9}")
        for name, q in summary["quantities"].items():
            case = "-" if q["max_case"] is None else str(q["max_case"])
            lines.append(f"{name:<{width}} {q['p50']:>12.5g} {q['p99']:>12.5g} "
                         f"{q['max']:>12.5g} {case:>9}")
    return "\n".join(lines)


def worst_cases(table: Mapping[str, np.ndarray], column: str, k: int = 10,
                largest: bool = True) -> np.ndarray:
    """The case ids of the ``k`` largest (or smallest) values of ``column``, worst first; NaN
    rows are skipped; ties go to the lower case id."""
    values = _float_column(table, column)
    cases = np.asarray(_column_of(table, "case"))
    keep = ~np.isnan(values)
    values, cases = values[keep], cases[keep]
    order = np.lexsort((cases, -values if largest else values))
    return cases[order][:k]


# ---------------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------------

def _figure(width: float, height: float) -> Any:
    """A matplotlib Figure on an Agg canvas (no pyplot, no global backend change)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, format="png")
    return path


def plot_capture_map(table: Mapping[str, np.ndarray], x: str = "lateral",
                     y: str = "closing_velocity", success: str = "captured",
                     path: str | Path = "capture_map.png") -> Path:
    """Scatter of the cases over (``x``, ``y``): captured, not captured, and error cases
    (``success`` NaN). Writes a PNG at ``path`` (parent folders made) and returns it."""
    xs, ys = _float_column(table, x), _float_column(table, y)
    ok = _float_column(table, success)
    fig = _figure(6.5, 5.0)
    ax = fig.subplots()
    groups = ((ok == 1.0, "o", "tab:green", f"{success}"),
              (ok == 0.0, "x", "tab:red", f"not {success}"),
              (np.isnan(ok), "^", "black", "error"))
    for mask, marker, color, label in groups:
        if mask.any():
            ax.scatter(xs[mask], ys[mask], marker=marker, color=color, s=18,
                       label=f"{label} ({int(mask.sum())})")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{success}: {int((ok == 1.0).sum())} of {int((~np.isnan(ok)).sum())} cases")
    ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    return _save(fig, path)


def plot_histograms(table: Mapping[str, np.ndarray], columns: Sequence[str],
                    path: str | Path) -> Path:
    """One histogram panel per column (NaN skipped), its p99 (numpy.percentile, linear)
    marked by a dashed line. Writes a PNG at ``path`` (parent folders made) and returns it."""
    if not columns:
        raise ValueError("plot_histograms: no columns given")
    ncols = min(3, len(columns))
    nrows = math.ceil(len(columns) / ncols)
    fig = _figure(4.0 * ncols, 3.0 * nrows)
    axes = np.atleast_1d(fig.subplots(nrows, ncols)).ravel()
    for ax, name in zip(axes, columns):
        _histogram(ax, name, _float_column(table, name))
    for ax in axes[len(columns):]:
        ax.set_visible(False)
    return _save(fig, path)


def _histogram(ax: Any, name: str, column: np.ndarray) -> None:
    values = column[~np.isnan(column)]
    ax.set_title(name)
    if len(values) == 0:
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
        return
    bins = int(min(50, max(10, math.sqrt(len(values)))))
    ax.hist(values, bins=bins, color="tab:blue", alpha=0.8)
    p99 = float(np.percentile(values, 99, method="linear"))
    ax.axvline(p99, color="tab:red", linestyle="--", label=f"p99 = {p99:.4g}")
    ax.set_ylabel("cases")
    ax.legend(fontsize="small")
