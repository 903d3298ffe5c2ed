"""Generation in forked workers (generator/jobs.py) gives the serial loop's files, errors and
order, and falls back to the serial loop where forking is not safe.

The forking checks run in a fresh Python process: a test process may already run threads of
its own (a runtime thread pool, a Dask cluster of an earlier test), and there map_items
rightly stays serial, which would leave the workers untested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from mechgen.generator import jobs

ROOT = Path(__file__).resolve().parent.parent

CHAIN = """
from mechgen.generator.families.serial.spec import ChainBuilder
BODY = {"mass": 1.5, "com": [0.1, 0.02, 0], "inertia": [0.01, 0.02, 0.03, 0.001, 0, 0]}
def three_link(derivatives=False):
    return (ChainBuilder("par3", gravity=(0, 0, -9.81), derivatives=derivatives)
            .joint("j1", "Rz", body={"name": "l1", **BODY})
            .joint("j2", "Ry", l=(0.3, 0.1, 0), body={"name": "l2", **BODY})
            .joint("j3", "Px", l=(0.2, 0, 0.05), body={"name": "l3", **BODY})
            .point("tip", "l3", offset=(0.1, 0, 0)).build())
"""


def run_fresh(code: str) -> dict:
    """``code`` in a new Python process (no other thread, two workers allowed); the JSON of
    its last line of output."""
    env = {**os.environ, "MECHGEN_JOBS": "2"}
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", ["chain with derivatives", "fourbar linkage"])
def test_two_workers_give_the_files_of_the_serial_loop(case):
    """Byte-identical files: the kernels (the derivative kernels' column loops, a linkage's
    Newton step) come back from the workers as the same trees, and their text printed in the
    workers that build them (files_for_model) is the text render prints on its own."""
    model = ("three_link(derivatives=True)" if case.startswith("chain")
             else "load(MECHANISMS / 'fourbar.toml')")
    out = run_fresh(CHAIN + f"""
import json, os
from mechgen.generator import jobs
from mechgen.generator.build import MECHANISMS, files_for_model
from mechgen.generator.frontend import load
model = {model}
forked = jobs.can_fork()
parallel = files_for_model(model, "spec.toml", "spec text", jobs=2)[1]
serial = files_for_model(model, "spec.toml", "spec text", jobs=1)[1]
from mechgen.generator.build import generate_kernels, manifest_fields
from mechgen.generator.emit import render, sha256_text
apart = render(model.name, "spec.toml", sha256_text("spec text"), generate_kernels(model, jobs=2),
               manifest_fields(model), jobs=2)
print(json.dumps({{"forked": forked, "same": parallel == serial, "apart": apart == serial,
                   "c_size": len(parallel[model.name + ".c"])}}))
""")
    assert out == {"forked": True, "same": True, "apart": True, "c_size": out["c_size"]}
    assert out["c_size"] > 10_000


def test_workers_run_the_items_in_order_in_other_processes():
    out = run_fresh(CHAIN + """
import json, os
from mechgen.generator import jobs
from mechgen.generator.build import generate_kernels
pids = list(jobs.map_items(lambda i: os.getpid(), 4))
names = [g.kernel.name for g in generate_kernels(three_link(), jobs=2)]
serial = [g.kernel.name for g in generate_kernels(three_link(), jobs=1)]
print(json.dumps({"parent": os.getpid(), "pids": pids, "names": names, "serial": serial,
                  "squares": list(jobs.map_items(lambda i: i * i, 5))}))
""")
    assert out["parent"] not in out["pids"] and 1 <= len(set(out["pids"])) <= 2
    assert out["names"] == out["serial"] and out["names"][0] == "forward_kinematics"
    assert out["squares"] == [0, 1, 4, 9, 16]


def test_workers_take_the_items_up_in_the_start_order_and_yield_them_in_index_order():
    """The kernels are taken up last first (the longest to build); the results keep the
    index order. Each item sleeps 0.3 s, so the two workers start items 3 and 2 first (the
    second worker may start late, never after an item is done), then 1 and 0."""
    out = run_fresh("""
import json, time
from mechgen.generator import jobs
def item(i):
    t = time.monotonic()
    time.sleep(0.3)
    return [i, t]
print(json.dumps(list(jobs.map_items(item, 4, start=[3, 2, 1, 0]))))
""")
    assert [i for i, _ in out] == [0, 1, 2, 3]
    by_start = [i for _, i in sorted((t, i) for i, t in out)]
    assert set(by_start[:2]) == {2, 3} and set(by_start[2:]) == {0, 1}


def test_an_item_is_given_the_results_it_needs_once_they_are_done():
    """map_graph: item 3 needs items 0 and 2, item 4 needs item 1; each gets their results
    (computed in workers, sent to the one that computes it) and starts after they end. The
    serial loop gives the same results."""
    out = run_fresh("""
import json, time
from mechgen.generator import jobs
def item(i, given):
    t0 = time.monotonic()
    time.sleep(0.2)
    return [i, [g[0] * 10 for g in given], t0, time.monotonic()]
after = {3: [0, 2], 4: [1]}
forked = list(jobs.map_graph(item, 5, after, jobs=2))
serial = list(jobs.map_graph(item, 5, after, jobs=1))
print(json.dumps({"forked": forked, "serial": serial}))
""")
    forked = out["forked"]
    assert [r[:2] for r in forked] == [[0, []], [1, []], [2, []], [3, [0, 20]], [4, [10]]]
    assert [r[:2] for r in out["serial"]] == [r[:2] for r in forked]
    start, end = {r[0]: r[2] for r in forked}, {r[0]: r[3] for r in forked}
    assert start[3] >= max(end[0], end[2]) and start[4] >= end[1]


def test_an_item_that_becomes_ready_is_taken_up_before_those_listed_after_it():
    """Item 6 needs item 0. The workers start 1 and 0, then 2 (handed out before 6 was
    ready); item 1 waits until item 6 has started (an event, not a clock: a loaded machine
    cannot reorder it). Item 6 is taken up before 3, 4 and 5, which the start order lists
    after it: a kernel's final passes do not wait for all the other kernels. Handed out in
    the start order regardless, 6 would queue behind 5, which a worker reaches only after
    3 and 4: item 1 would wait its 30 s and 6 start last."""
    out = run_fresh("""
import json, multiprocessing, time
from mechgen.generator import jobs
started = multiprocessing.get_context("fork").Event()
def item(i, given):
    t0 = time.monotonic()
    if i == 1:
        started.wait(30)
    elif i == 6:
        started.set()
    else:
        time.sleep(0.1)
    return t0
print(json.dumps(list(jobs.map_graph(item, 7, {6: [0]}, jobs=2, start=[6, 1, 0, 2, 3, 4, 5]))))
""")
    assert out[6] < min(out[3], out[4], out[5])


def test_an_item_needing_a_later_item_is_refused():
    with pytest.raises(ValueError, match="item 1 needs \\[2\\]: only items of lower index"):
        list(jobs.map_graph(lambda i, given: i, 3, {1: [2]}, jobs=2))


def test_a_failing_item_raises_its_error_and_the_items_that_need_it_never_run(tmp_path):
    marker = tmp_path / "item3_ran"
    out = run_fresh(f"""
import json, pathlib
from mechgen.generator import jobs
from mechgen.generator.model import ModelError
def item(i, given):
    if i == 1:
        raise ModelError("spec.toml: item 1 refused")
    if i == 3:
        pathlib.Path({str(marker)!r}).touch()
    return i
try:
    list(jobs.map_graph(item, 4, {{3: [1]}}, jobs=2))
    print(json.dumps({{"raised": None}}))
except ModelError as e:
    print(json.dumps({{"raised": str(e)}}))
""")
    assert out == {"raised": "spec.toml: item 1 refused"}
    assert not marker.exists()


def test_results_unpickle_to_the_same_expressions_without_evaluating_them(monkeypatch):
    """The workers' maxima, minima, absolute values, powers and functions come back as the
    objects pickled, rebuilt without SymPy's evaluation (which compares every pair of a
    Max's arguments through the assumptions system: 3.7 s for apas_interface's contact
    kernel). Evaluating them again is refused here, so the test fails if it happens."""
    import pickle
    from multiprocessing.reduction import ForkingPickler

    import sympy as sp
    from sympy.core.cache import clear_cache
    from sympy.functions.elementary.miscellaneous import MinMaxBase
    x, y, z = sp.symbols("x y z", real=True)
    exprs = [sp.Max(x, y, 0), sp.Min(x * y, z + 1, 2), sp.Abs(x - y), sp.sqrt(x ** 2 + y ** 2),
             (x + y) ** -2, sp.sin(x) * sp.cos(y) + sp.atan2(y, x),
             sp.Min(sp.Max(x, 0), 1) / sp.Max(sp.Abs(z), sp.Rational(1, 10 ** 9)),
             sp.exp(x) + sp.log(z) + sp.tan(y) + sp.sign(x)]
    data = [bytes(ForkingPickler.dumps(e)) for e in exprs]

    def refuse(*args, **kwargs):
        raise AssertionError("evaluated again on unpickling")
    for cls, name in ((MinMaxBase, "_collapse_arguments"), (MinMaxBase, "_find_localzeros"),
                      (sp.Abs, "eval"), (sp.sin, "eval"), (sp.cos, "eval"), (sp.atan2, "eval"),
                      (sp.tan, "eval"), (sp.exp, "eval"), (sp.log, "eval"), (sp.sign, "eval")):
        monkeypatch.setattr(cls, name, classmethod(refuse))
    clear_cache()
    back = [pickle.loads(d) for d in data]
    monkeypatch.undo()
    for e, b in zip(exprs, back):
        assert b == e and sp.srepr(b) == sp.srepr(e)


@pytest.mark.parametrize("start", [[0, 1, 1], [0, 1], [2, 1, 3]])
def test_a_start_order_that_is_no_order_of_the_items_is_refused(start):
    with pytest.raises(ValueError, match="not an order of the 3 items"):
        list(jobs.map_items(lambda i: i, 3, jobs=2, start=start))


def test_the_first_failing_item_raises_its_own_error_in_the_parent():
    out = run_fresh("""
import json
from mechgen.generator import jobs
from mechgen.generator.model import ModelError
def fail_on_odd(i):
    if i % 2:
        raise ModelError(f"spec.toml: item {i} refused")
    return i
try:
    list(jobs.map_items(fail_on_odd, 6))
    print(json.dumps({"raised": None}))
except ModelError as e:
    print(json.dumps({"raised": str(e)}))
""")
    assert out == {"raised": "spec.toml: item 1 refused"}


def test_a_map_inside_a_worker_runs_serially_there():
    out = run_fresh("""
import json, os
from mechgen.generator import jobs
parent = os.getpid()
inner = list(jobs.map_items(
    lambda i: [(10 * i + j, os.getpid()) for j in jobs.map_items(lambda j: j, 3)], 2))
print(json.dumps({"values": [[v for v, _ in row] for row in inner],
                  "in_workers": all(p != parent for row in inner for _, p in row)}))
""")
    assert out == {"values": [[0, 1, 2], [10, 11, 12]], "in_workers": True}


def test_a_parent_running_other_threads_does_not_fork(monkeypatch):
    monkeypatch.setenv("MECHGEN_JOBS", "2")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not jobs.can_fork()
        assert set(jobs.map_items(lambda i: os.getpid(), 3)) == {os.getpid()}
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_mechgen_jobs_is_refused_naming_the_variable(monkeypatch, value):
    monkeypatch.setenv("MECHGEN_JOBS", value)
    with pytest.raises(ValueError, match="MECHGEN_JOBS"):
        jobs.default_jobs()


def test_a_kernel_with_candidates_is_the_one_optimise_keeps():
    """generate_kernels builds each candidate of a choice as its own work item, then finishes
    the cheapest: the same kernel, statement for statement, as optimise(builder)."""
    from mechgen.generator.build import family_of, generate_kernels
    from mechgen.generator.pipeline import optimise
    namespace: dict = {}
    exec(CHAIN, namespace)
    model = namespace["three_link"]()
    family = family_of(model)
    builders = family.builders_for(model)
    chosen = [i for i, b in enumerate(builders) if getattr(b, "candidates", None)]
    assert chosen, "the chain has a kernel with candidates (forward dynamics)"
    got = generate_kernels(model, jobs=1)
    for i in chosen:
        expect = optimise(builders[i], family.coded(model))
        assert got[i].kernel == expect.kernel
        assert got[i].ops == expect.ops and got[i].passes == expect.passes
