"""The runtime's fast single-state path, ``out=`` and ``threads=`` (runtime/kernel.py,
runtime/fastcall.py with runtime/csrc/extension/fastcall.c, runtime/batch_threads.py).

The fast path must give the bits of the general path and of the batch path; ``threads=`` the
bits of one thread, with the statuses merged; bad input is rejected on every path with the
messages of the general path (the Python backend, which always takes the general path, is the
reference for the messages). Speed is measured in bench/overhead.py, not here.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import batch_threads, fastcall
from mechgen.runtime.kernel import KernelStatusError

_loaded: dict[tuple[str, str], runtime.Mechanism] = {}


def get(name: str, backend: str = "c") -> runtime.Mechanism:
    if (name, backend) not in _loaded:
        _loaded[name, backend] = runtime.load(name, backend)
    return _loaded[name, backend]


def states(mech, kernel: str, n: int, seed: int) -> list[np.ndarray]:
    """n random states of every input of ``kernel`` (shape (n, size)); p near its defaults."""
    rng = np.random.default_rng(seed)
    k = mech.kernels[kernel]
    if mech.manifest.get("family") == "parallel":
        home = np.array(mech.manifest["home"])
        pose = home + np.concatenate([rng.uniform(-0.03, 0.03, (n, 3)),
                                      rng.uniform(-0.06, 0.06, (n, 3))], axis=1)
        draw = {"x": pose, "u": rng.normal(0, 0.3, (n, 6)), "F": rng.normal(0, 80, (n, 6)),
                "fE": rng.normal(0, 150, (n, 3)), "mE": rng.normal(0, 30, (n, 3)),
                "g": np.array(mech.manifest["gravity"]) + rng.normal(0, 0.5, (n, 3))}
    else:
        draw = {name: rng.uniform(-1.5, 1.5, (n, size)) for name, size in k.inputs}
    if "p" in dict(k.inputs):
        draw["p"] = np.tile(mech.params(), (n, 1)) * rng.uniform(0.9, 1.1, (n, len(
            mech.parameters)))
    return [np.ascontiguousarray(draw[name]) for name, _ in k.inputs]


def as_tuple(x) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def assert_bitwise_equal(a, b) -> None:
    """Same shapes, same bits (NaN where NaN, the sign of zeros too)."""
    for x, y in zip(as_tuple(a), as_tuple(b), strict=True):
        assert x.shape == y.shape
        assert np.array_equal(x.view(np.int64), y.view(np.int64))


CASES = [("ur5", "mass_matrix"), ("panda", "forward_dynamics"), ("solo12", "inverse_dynamics"),
         ("space_arm7", "forward_dynamics"), ("gough_stewart_docking", "step"),
         ("hunt_rus_docking", "inverse_kinematics")]


@pytest.mark.parametrize("name,kernel", CASES)
def test_fast_path_gives_the_bits_of_the_batch_path_and_of_the_general_path(name, kernel):
    mech = get(name)
    k = mech.kernels[kernel]
    batch = states(mech, kernel, 40, seed=1)
    whole = k(*batch, errors="nan")
    for i in range(len(batch[0])):
        row = [a[i].copy() for a in batch]
        fast = k(*row, errors="nan")
        general = k(*[a.tolist() for a in row], errors="nan")      # lists: the general path
        assert_bitwise_equal(fast, general)
        assert_bitwise_equal(fast, tuple(w[i] for w in as_tuple(whole)))


def test_fast_path_outputs_are_fresh_arrays_each_call():
    mech = get("ur5")
    q1, q2 = states(mech, "mass_matrix", 2, seed=2)[0]
    A1 = mech.mass_matrix(q1)
    before = A1.copy()
    A2 = mech.mass_matrix(q2)
    assert A1 is not A2 and not np.shares_memory(A1, A2)
    assert_bitwise_equal(A1, before)


def test_omitted_p_and_keyword_inputs_take_the_defaults_on_the_fast_path():
    hexa = get("gough_stewart_docking")
    args = [a[0] for a in states(hexa, "step", 1, seed=3)[:6]]
    full = hexa.step(*args, p=hexa.params())
    assert_bitwise_equal(hexa.step(*args), full)
    assert_bitwise_equal(hexa.step(*args, p=None), full)
    names = [n for n, _ in hexa.step.inputs]
    assert_bitwise_equal(hexa.step(**dict(zip(names, args))), full)
    assert_bitwise_equal(hexa.step(*args[:2], **dict(zip(names[2:6], args[2:]))), full)
    first = hexa.parameters[0]
    assert_bitwise_equal(hexa.step(*args, p={first: hexa.params()[0]}), full)


def test_single_state_status_raises_or_gives_nan_rows_on_the_fast_path():
    mech = get("space_arm7")
    q = np.zeros(mech.n)
    q[4] = np.pi / 2                                # psi_z = 90 deg: the angle singularity
    z = np.zeros(mech.n)
    with pytest.raises(KernelStatusError, match=r"^forward_dynamics: free base within .* at "
                                                r"this state$") as info:
        mech.forward_dynamics(q, z, z)
    assert info.value.status.dtype == np.int32 and info.value.status.shape == (1,)
    assert info.value.status[0] != 0
    assert np.isnan(mech.forward_dynamics(q, z, z, errors="nan")).all()
    with pytest.raises(ValueError, match=r"errors must be 'raise' or 'nan', got 'ignore'"):
        mech.forward_dynamics(q, z, z, errors="ignore")


def test_finite_values_whose_sum_overflows_are_accepted():
    mech = get("ur5")
    q = np.array([1e308, 1e308, 0.5, -0.3, 0.2, 0.1])
    assert_bitwise_equal(mech.mass_matrix(q), mech.mass_matrix(q[None, :])[0])


def _refuse_general_path(kernel, monkeypatch) -> None:
    def general(*args, **kwargs):
        raise AssertionError(f"{kernel.name}: the general path was taken")
    monkeypatch.setattr(kernel, "_call_general", general)


def test_single_state_calls_of_plain_arrays_stay_in_the_c_entry(monkeypatch):
    hexa = get("gough_stewart_docking")
    step = hexa.kernels["step"]
    args = [a[0] for a in states(hexa, "step", 1, seed=12)][:6] + [hexa.params()]
    expect = step._call_general(tuple(args), {}, "raise", None, 1)
    _refuse_general_path(step, monkeypatch)
    res = tuple(np.empty(shape) for _, shape in step.outputs)
    for got in (step(*args), step(*args[:6]), step(*args[:6], p=args[6]),
                step(*args[:6], p=None), step(*args[:6], None), step(*args, errors="nan"),
                step(*args, out=res), step(*args, out=list(res))):
        assert_bitwise_equal(got, expect)
    mm = get("panda").kernels["mass_matrix"]
    _refuse_general_path(mm, monkeypatch)
    A = np.empty((7, 7))
    assert mm(np.zeros(7), out=A) is A


@pytest.mark.parametrize("backend", ["c", "python"])
def test_out_may_be_an_input_on_every_path(backend):
    """The C entry copies its inputs; the general path (the Python backend, a list input, a
    batch, threads) copies an input that an output overlaps. Either way the result is that of
    separate arrays."""
    arm = get("ur5", backend)
    batch = states(arm, "inverse_dynamics", 9, seed=13)
    q, qd, qdd = (a[0] for a in batch)
    expect = arm.inverse_dynamics(q, qd, qdd)
    tau = qdd.copy()
    assert arm.inverse_dynamics(q, qd, tau, out=tau) is tau
    assert_bitwise_equal(tau, expect)
    tau = qdd.copy()
    assert arm.inverse_dynamics(q.tolist(), qd, tau, out=tau) is tau      # a list: general path
    assert_bitwise_equal(tau, expect)
    expect_batch = arm.inverse_dynamics(*batch)
    taus = batch[2].copy()
    got = arm.inverse_dynamics(batch[0], batch[1], taus, out=taus, threads=2)
    assert got is taus
    assert_bitwise_equal(taus, expect_batch)
    shifted = np.concatenate([batch[2], np.zeros((1, 6))])   # out overlaps the input's next row
    got = arm.inverse_dynamics(batch[0], batch[1], shifted[:-1], out=shifted[1:])
    assert_bitwise_equal(got, expect_batch)


@pytest.mark.parametrize("backend", ["c", "python"])
def test_an_out_tuple_comes_back_itself_on_every_path(backend):
    hexa = get("gough_stewart_docking", backend)
    args = [a[0] for a in states(hexa, "step", 1, seed=15)]
    res = tuple(np.empty(shape) for _, shape in hexa.step.outputs)
    assert hexa.step(*args, errors="nan", out=res) is res
    assert hexa.step(*[a.tolist() for a in args], errors="nan", out=res) is res
    listed = list(res)
    got = hexa.step(*args, errors="nan", out=listed)
    assert type(got) is tuple and all(g is r for g, r in zip(got, listed))


def test_unaligned_inputs_give_the_bits_of_aligned_ones():
    arm = get("panda")
    q = states(arm, "mass_matrix", 1, seed=14)[0][0]
    raw = np.zeros(8 * q.size + 1, dtype=np.uint8)
    unaligned = raw[1:].view(np.float64)
    unaligned[:] = q
    assert not unaligned.flags.aligned
    assert_bitwise_equal(arm.mass_matrix(unaligned), arm.mass_matrix(q))


def test_without_the_c_entry_the_general_path_gives_the_same_bits(monkeypatch):
    expect = get("panda").mass_matrix(np.full(7, 0.3))
    monkeypatch.setattr(fastcall, "module", lambda: None)
    arm = runtime.load("panda")
    assert arm.kernels["mass_matrix"]._fast is None
    assert_bitwise_equal(arm.mass_matrix(np.full(7, 0.3)), expect)


def test_a_c_entry_that_cannot_be_built_warns_and_leaves_the_general_path(tmp_path):
    code = ("import warnings; from mechgen.runtime import fastcall\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    assert fastcall.module() is None\n"
            "print(w[0].message)\n")
    env = {**__import__("os").environ, "MECHGEN_CACHE": str(tmp_path), "CC": "/no/such/cc"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "kernels' C entry (runtime/csrc/extension/fastcall.c) could not be built" in run.stdout


def test_the_c_entry_refuses_kernels_it_cannot_call():
    entry = fastcall.module().Entry
    with pytest.raises(ValueError, match="at most 24 in all"):
        entry(1, 0, (3,) * 20, ((3,),) * 5, -1, None)
    with pytest.raises(ValueError, match="p_default must be a float64 array"):
        entry(1, 0, (3, 2), ((3,),), 1, np.zeros(3))
    with pytest.raises(ValueError, match="shape must be a tuple of at most 3"):
        entry(1, 0, (3,), ((1, 2, 3, 4),), -1, None)
    with pytest.raises(ValueError, match="address 0"):
        entry(0, 0, (3,), ((3,),), -1, None)
    with pytest.raises(ValueError, match="inputs are too large"):
        entry(1, 0, (2**62, 2**62), ((3,),), -1, None)
    with pytest.raises(ValueError, match="output 0 is too large"):
        entry(1, 0, (3,), ((2**31, 2**31, 4),), -1, None)
    with pytest.raises(ValueError, match="negative"):
        entry(1, 0, (-3,), ((3,),), -1, None)


# --- bad input: the same errors as the general path --------------------------------------

def _bad_inputs(good: np.ndarray):
    """(label, bad value) variants of one good single-state input."""
    size = good.size
    wide = np.zeros(2 * size)
    wide[::2] = good
    yield "float32", good.astype(np.float32)
    yield "strided", wide[::2]
    yield "too short", good[:-1].copy()
    yield "2-d row", good[None, :].copy()
    yield "masked", np.ma.MaskedArray(good.copy())
    yield "big-endian", good.astype(">f8")
    for i in sorted({0, size - 1}):
        for v in (np.nan, np.inf, -np.inf):
            bad = good.copy()
            bad[i] = v
            yield f"{v} at {i}", bad


@pytest.mark.parametrize("name,kernel", [("ur5", "inverse_dynamics"),
                                         ("gough_stewart_docking", "step")])
def test_bad_single_state_input_gets_the_general_paths_message_naming_the_argument(name,
                                                                                   kernel):
    c, py = get(name, "c").kernels[kernel], get(name, "python").kernels[kernel]
    good = [a[0] for a in states(get(name), kernel, 1, seed=4)]
    for j, (input_name, _) in enumerate(c.inputs):
        for label, bad in _bad_inputs(good[j]):
            args = good[:j] + [bad] + good[j + 1:]
            messages = []
            for k in (c, py):
                with pytest.raises(ValueError) as info:
                    k(*args)
                messages.append(str(info.value))
            assert messages[0] == messages[1], (label, messages)
            if label != "2-d row":                     # (that one is a mix of batch/single)
                assert f"argument '{input_name}'" in messages[0], (label, messages[0])


# --- out= ----------------------------------------------------------------------------------

def test_out_receives_the_outputs_and_is_returned_single_and_batch():
    hexa = get("gough_stewart_docking")
    batch = states(hexa, "step", 70, seed=5)
    expect = hexa.step(*batch, errors="nan")
    res = tuple(np.full((70, *shape), 7.0) for _, shape in hexa.step.outputs)
    got = hexa.step(*batch, errors="nan", out=res)
    assert got is res or all(g is r for g, r in zip(got, res))
    assert_bitwise_equal(res, expect)
    single = tuple(np.empty(shape) for _, shape in hexa.step.outputs)
    for i in (0, 1, 2):                            # the same tuple again: cached pointers
        got = hexa.step(*[a[i] for a in batch], errors="nan", out=single)
        assert all(g is s for g, s in zip(got, single))
        assert_bitwise_equal(single, tuple(e[i] for e in expect))
    fresh = [np.empty(shape) for _, shape in hexa.step.outputs]   # a list: checked each call
    hexa.step(*[a[3] for a in batch], errors="nan", out=fresh)
    assert_bitwise_equal(tuple(fresh), tuple(e[3] for e in expect))


def test_out_of_a_one_output_kernel_may_be_the_array_itself():
    mech = get("panda")
    q = states(mech, "mass_matrix", 5, seed=6)[0]
    A = np.empty((mech.n, mech.n))
    assert mech.mass_matrix(q[0], out=A) is A
    assert_bitwise_equal(A, mech.mass_matrix(q[0]))
    B = np.empty((5, mech.n, mech.n))
    assert mech.mass_matrix(q, out=(B,)) is B
    assert_bitwise_equal(B, mech.mass_matrix(q))


@pytest.mark.parametrize("backend", ["c", "python"])
def test_bad_out_is_refused_naming_the_output(backend):
    arm = get("ur5", backend)
    q = np.zeros(6)
    qd = np.zeros(6)
    A = np.empty((6, 6))
    cases = [
        (np.empty((6, 6), np.float32), r"output 'A' \(out\[0\]\) must be float64, got float32"),
        (np.empty((6, 5)), r"output 'A' \(out\[0\]\) must have shape \(6, 6\), got \(6, 5\)"),
        (np.empty((6, 12))[:, ::2], r"output 'A' \(out\[0\]\) must be C-contiguous"),
        ([[0.0] * 6] * 6, r"out must be a tuple of 1 array\(s\) \(A\), got list"),
        ((A, A), r"out must be a tuple of 1 array\(s\) \(A\)"),
        (("A",), r"output 'A' \(out\[0\]\) must be a numpy array, got str"),
        (np.ma.MaskedArray(A), r"output 'A' \(out\[0\]\) must be a numpy array"),
    ]
    readonly = np.empty((6, 6))
    readonly.flags.writeable = False
    cases.append((readonly, r"output 'A' \(out\[0\]\) is read-only"))
    for bad, message in cases:
        with pytest.raises(ValueError, match=r"^mass_matrix: " + message):
            arm.mass_matrix(q, out=bad)
    with pytest.raises(ValueError, match=r"output 'A' \(out\[0\]\) must have shape \(3, 6, 6\)"):
        arm.mass_matrix(np.zeros((3, 6)), out=A)
    shapes = [s for _, s in arm.velocities.outputs]
    whole = np.empty(max(int(np.prod(s)) for s in shapes))
    views = tuple(whole[:int(np.prod(s))].reshape(s) for s in shapes)   # all at the same place
    with pytest.raises(ValueError, match=r"^velocities: outputs 'v' \(out\[0\]\) and 'omega' "
                                         r"\(out\[1\]\) share memory"):
        arm.velocities(q, qd, out=views)


# --- threads= ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kernel", [("solo12", "forward_dynamics"),
                                         ("gough_stewart_docking", "step")])
def test_threads_give_the_bits_of_one_thread(name, kernel):
    mech = get(name)
    batch = states(mech, kernel, 64 * 5 + 37, seed=7)
    one = mech.kernels[kernel](*batch, errors="nan")
    for threads in (2, 3, 8, "auto"):
        assert_bitwise_equal(mech.kernels[kernel](*batch, errors="nan", threads=threads), one)


def test_threads_merge_the_statuses_of_every_chunk():
    mech = get("space_arm7")
    q, qd, Q, p = states(mech, "forward_dynamics", 1000, seed=8)
    bad = [3, 64, 500, 999]                             # in the first, second and last chunks
    q[bad, 4] = np.pi / 2
    errors = []
    for threads in (1, 3):
        with pytest.raises(KernelStatusError) as info:
            mech.forward_dynamics(q, qd, Q, p, threads=threads)
        errors.append(info.value)
    assert str(errors[0]) == str(errors[1])
    assert f"state(s) {bad}" in str(errors[1])
    assert np.array_equal(errors[0].status, errors[1].status)
    assert np.flatnonzero(errors[1].status).tolist() == bad
    nan = mech.forward_dynamics(q, qd, Q, p, threads=3, errors="nan")
    assert np.isnan(nan[bad]).all() and np.isfinite(np.delete(nan, bad, axis=0)).all()


def test_threads_with_out_write_every_chunk_into_the_given_array():
    mech = get("solo12")
    batch = states(mech, "mass_matrix", 64 * 4 + 1, seed=9)
    A = np.full((len(batch[0]), mech.n, mech.n), np.nan)
    assert mech.mass_matrix(*batch, out=A, threads=4) is A
    assert_bitwise_equal(A, mech.mass_matrix(*batch))


@pytest.mark.parametrize("bad", [0, -2, 1.5, "two", True, None, np.array([1, 2])])
@pytest.mark.parametrize("states", [10, None])
def test_bad_threads_are_refused_naming_the_argument(bad, states):
    q = np.zeros(6) if states is None else np.zeros((states, 6))
    with pytest.raises(ValueError, match=r"^mass_matrix: argument 'threads' must be a positive "
                                         r"integer or 'auto'"):
        get("ur5").mass_matrix(q, threads=bad)


def test_chunks_cover_the_batch_in_order_from_block_starts():
    for n in (0, 1, 63, 64, 65, 1000, 100_003):
        for threads in (1, 2, 3, 7, 64):
            spans = batch_threads.chunks(n, threads)
            assert len(spans) <= max(1, threads)
            assert spans[0][0] == 0 and spans[-1][1] == n
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
            assert all(lo % batch_threads.ALIGN == 0 for lo, _ in spans)
            assert all(hi > lo for lo, hi in spans) or n == 0


def test_auto_threads_use_one_thread_for_small_batches():
    assert batch_threads.thread_count("auto", batch_threads.AUTO_MIN_STATES - 1, "k") == 1
    assert 1 <= batch_threads.thread_count("auto", 10**7, "k") <= batch_threads.available_cpus()


def test_python_backend_takes_out_and_threads_with_the_same_results():
    c, py = get("ur5_arm", "c"), get("ur5_arm", "python")
    batch = states(c, "inverse_dynamics", 5, seed=10)
    Q = np.empty((5, 6))
    assert py.inverse_dynamics(*batch, out=Q, threads=2) is Q
    np.testing.assert_allclose(Q, c.inverse_dynamics(*batch), rtol=1e-12, atol=1e-12)


def test_concurrent_single_state_calls_from_threads_each_get_their_own_results():
    hexa = get("gough_stewart_docking")
    batch = states(hexa, "step", 400, seed=11)
    expect = hexa.step(*batch, errors="nan")
    got: dict[int, list] = {}

    def worker(t: int) -> None:
        rows = range(t, 400, 4)
        got[t] = [(i, hexa.step(*[a[i] for a in batch], errors="nan")) for i in rows]

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for rows in got.values():
        for i, res in rows:
            assert_bitwise_equal(res, tuple(e[i] for e in expect))


# --- small batches in the C entry ------------------------------------------------------------

@pytest.mark.parametrize("name,kernel", CASES)
def test_small_batches_stay_in_the_c_entry_with_the_bits_of_the_general_path(name, kernel,
                                                                              monkeypatch):
    mech = get(name)
    k = mech.kernels[kernel]
    for n in (1, 7, 64, 65, 512):
        batch = states(mech, kernel, n, seed=20 + n)
        expect = k._call_general(tuple(batch), {}, "nan", None, 1)
        with monkeypatch.context() as m:
            _refuse_general_path(k, m)
            assert_bitwise_equal(k(*batch, errors="nan"), expect)
            res = tuple(np.full((n, *shape), 3.0) for _, shape in k.outputs)
            got = k(*batch, errors="nan", out=res if len(res) > 1 else res[0])
            assert_bitwise_equal(got, expect)
            assert all(g is r for g, r in zip(as_tuple(got), res))


def test_one_parameter_vector_is_repeated_for_every_state_of_a_small_batch(monkeypatch):
    hexa = get("gough_stewart_docking")
    step = hexa.kernels["step"]
    states_ = states(hexa, "step", 9, seed=31)[:6]
    p = hexa.params() * 1.01
    expect = step._call_general(tuple(states_) + (np.tile(p, (9, 1)),), {}, "nan", None, 1)
    defaults = step._call_general(tuple(states_), {}, "nan", None, 1)
    _refuse_general_path(step, monkeypatch)
    assert_bitwise_equal(step(*states_, p, errors="nan"), expect)
    assert_bitwise_equal(step(*states_, p=p, errors="nan"), expect)
    assert_bitwise_equal(step(*states_, errors="nan"), defaults)
    assert_bitwise_equal(step(*states_, None, errors="nan"), defaults)


def test_batches_the_c_entry_leaves_get_the_general_paths_bits_and_messages():
    """Beyond 512 states, with threads, out overlapping an input, or bad input: the general
    path, as before; a failed state with errors="raise" is reported with the general path's
    message (the Python backend gives the reference messages)."""
    arm, ref = get("ur5"), get("ur5", "python")
    big = states(arm, "inverse_dynamics", 600, seed=32)
    assert_bitwise_equal(arm.inverse_dynamics(*big),
                         arm.inverse_dynamics._call_general(tuple(big), {}, "raise", None, 1))
    assert_bitwise_equal(arm.inverse_dynamics(*big, threads=2), arm.inverse_dynamics(*big))
    small = [a[:20] for a in big]
    expect = arm.inverse_dynamics(*small)
    qdd = small[2].copy()
    assert arm.inverse_dynamics(small[0], small[1], qdd, out=qdd) is qdd
    assert_bitwise_equal(qdd, expect)
    for label, bad in (("nan", np.where(np.arange(20)[:, None] == 5, np.nan, small[0])),
                       ("float32", small[0].astype(np.float32)),
                       ("strided", np.repeat(small[0], 2, axis=0)[::2]),
                       ("other length", small[0][:19].copy())):
        messages = []
        for mech in (arm, ref):
            with pytest.raises(ValueError) as info:
                mech.inverse_dynamics(bad, small[1], small[2])
            messages.append(str(info.value))
        assert messages[0] == messages[1], (label, messages)
    space, space_ref = get("space_arm7"), get("space_arm7", "python")
    q = np.zeros((5, space.n))
    q[3, 4] = np.pi / 2                          # state 3 at the angle singularity
    z = np.zeros((5, space.n))
    messages = []
    for mech in (space, space_ref):
        with pytest.raises(KernelStatusError) as info:
            mech.forward_dynamics(q, z, z)
        messages.append(str(info.value))
        assert np.flatnonzero(info.value.status).tolist() == [3]
    assert messages[0] == messages[1] and "state(s) [3]" in messages[0]
    nan_rows = space.forward_dynamics(q, z, z, errors="nan")
    assert np.isnan(nan_rows[3]).all() and np.isfinite(np.delete(nan_rows, 3, axis=0)).all()


def test_a_failed_batch_raises_from_the_c_entry_with_the_general_paths_message(monkeypatch):
    """The C entry raises the error of a failed batch itself (runtime.kernel.status_error, the
    general path's message and statuses), without computing the batch again; the outputs
    given in out are written, as on the general path."""
    space, space_ref = get("space_arm7"), get("space_arm7", "python")
    q = np.zeros((7, space.n))
    q[[3, 5], 4] = np.pi / 2                     # states 3 and 5 at the angle singularity
    z = np.zeros((7, space.n))
    with pytest.raises(KernelStatusError) as info:
        space_ref.forward_dynamics(q, z, z)
    expect, expect_status = str(info.value), info.value.status
    fd = space.forward_dynamics
    _refuse_general_path(fd, monkeypatch)
    out = np.full((7, space.n), 7.0)
    for given in (None, out):
        with pytest.raises(KernelStatusError) as info:
            fd(q, z, z, out=given)
        assert str(info.value) == expect and "state(s) [3, 5]" in expect
        assert info.value.status.dtype == np.int32
        assert np.array_equal(info.value.status, expect_status)
    assert_bitwise_equal(out, fd(q, z, z, errors="nan"))


def test_a_failed_batch_whose_out_holds_p_raises_as_the_general_path():
    """out overlapping a p given once: the C entry leaves the batch to the general path, which
    must still read p unchanged when it reports the failed state."""
    hexa = get("gough_stewart_docking")
    step = hexa.kernels["step"]
    n = 4
    x = np.tile(np.array(hexa.manifest["home"], float), (n, 1))
    x[2, 2] += 0.5                                     # state 2 beyond a stroke limit
    z6, z3 = np.zeros((n, 6)), np.zeros((n, 3))
    g = np.tile(np.array(hexa.manifest["gravity"], float), (n, 1))
    messages = []
    for call in (lambda p, out: step._call_general((x, z6, z6, z3, z3, g, p), {}, "raise", out, 1),
                 lambda p, out: step(x, z6, z6, z3, z3, g, p, out=out)):
        out = tuple(np.zeros((n, *shape)) for _, shape in step.outputs)
        p = out[0][2, :len(hexa.parameters)]
        p[:] = hexa.params()                           # p lives in row 2 of out[0]
        with pytest.raises(KernelStatusError) as info:
            call(p, out)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "state(s) [2]" in messages[0]


def test_a_kernel_the_c_entry_cannot_call_takes_the_general_path():
    import copy
    from mechgen.runtime.kernel import Kernel
    arm = get("ur5")
    k = arm.mass_matrix
    meta = copy.deepcopy(next(m for m in arm.manifest["kernels"] if m["name"] == "mass_matrix"))
    meta["outputs"][0]["shape"] = [1, 1, 6, 6]        # rank 4: beyond the entry's 3
    rank4 = Kernel(meta, "c", c_lib=k._lib, ffi=k._ffi)
    assert rank4._fast is None
    q = np.linspace(-1, 1, 6)
    assert_bitwise_equal(rank4(q), arm.mass_matrix(q).reshape(1, 1, 6, 6))
