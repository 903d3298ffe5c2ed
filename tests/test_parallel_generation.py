"""Generation in forked workers (generator/jobs.py) gives the serial loop's files, errors and
order, and falls back to the serial loop where forking is not safe."""

from __future__ import annotations

import os
import threading

import pytest

from mechgen.generator import jobs
from mechgen.generator.build import files_for_model, generate_kernels
from mechgen.generator.families.serial.spec import ChainBuilder
from mechgen.generator.model import ModelError

BODY = {"mass": 1.5, "com": [0.1, 0.02, 0], "inertia": [0.01, 0.02, 0.03, 0.001, 0, 0]}


def three_link(name: str = "par3"):
    return (ChainBuilder(name, gravity=(0, 0, -9.81))
            .joint("j1", "Rz", body={"name": "l1", **BODY})
            .joint("j2", "Ry", l=(0.3, 0.1, 0), body={"name": "l2", **BODY})
            .joint("j3", "Px", l=(0.2, 0, 0.05), body={"name": "l3", **BODY})
            .point("tip", "l3", offset=(0.1, 0, 0)).build())


@pytest.fixture
def two_workers(monkeypatch):
    """Two workers, and a check that this process may fork them (a pytest run that started
    threads of its own falls back to the serial loop: nothing parallel would be tested)."""
    monkeypatch.setenv("MECHGEN_JOBS", "2")
    if not jobs.can_fork():
        pytest.skip("this process runs other threads or cannot fork")


def test_two_workers_give_the_files_of_the_serial_loop(two_workers, monkeypatch):
    chain = three_link()
    parallel = files_for_model(chain, "par3.toml", "spec text")[1]
    monkeypatch.setenv("MECHGEN_JOBS", "1")
    serial = files_for_model(chain, "par3.toml", "spec text")[1]
    assert parallel == serial
    assert len(parallel["par3.c"]) > 10_000


def test_workers_return_the_kernels_in_the_builders_order(two_workers):
    names = [g.kernel.name for g in generate_kernels(three_link(), jobs=2)]
    assert names == [g.kernel.name for g in generate_kernels(three_link(), jobs=1)]
    assert names[0] == "forward_kinematics" and "mass_matrix" in names


def test_two_workers_run_the_items_in_other_processes(two_workers):
    pids = set(jobs.map_items(lambda i: os.getpid(), 4))
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def _fail_on_odd(i: int) -> int:
    if i % 2:
        raise ModelError(f"spec.toml: item {i} refused")
    return i


def test_the_first_failing_item_raises_its_own_error_in_the_parent(two_workers):
    assert list(jobs.map_items(lambda i: i * i, 5)) == [0, 1, 4, 9, 16]
    with pytest.raises(ModelError, match=r"^spec.toml: item 1 refused$"):
        list(jobs.map_items(_fail_on_odd, 6))


def test_a_map_inside_a_worker_runs_serially_there(two_workers):
    inner = list(jobs.map_items(lambda i: list(jobs.map_items(lambda j: 10 * i + j, 3)), 2))
    assert inner == [[0, 1, 2], [10, 11, 12]]


def test_a_parent_running_other_threads_does_not_fork(monkeypatch):
    monkeypatch.setenv("MECHGEN_JOBS", "2")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not jobs.can_fork()
        pids = set(jobs.map_items(lambda i: os.getpid(), 3))
        assert pids == {os.getpid()}
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_mechgen_jobs_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("MECHGEN_JOBS", value)
    with pytest.raises(ValueError, match="MECHGEN_JOBS"):
        jobs.default_jobs()
