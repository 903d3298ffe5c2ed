"""Runtime misuse raises clear errors naming the argument; both backends agree; the C cache.

Bundled mechanisms: ur5_arm (n = 6, no parameter) and space_arm7 (n = 13, parameter m_payload).
The C backend compiles once per process into the cache; only the cache tests point
MECHGEN_CACHE at a temporary folder. Parameter defaults are checked on generated 1-joint
pendulums whose manifests say which parameters have defaults (built into a temporary cache),
and on the bundled gough_stewart_docking (Python backend). tests/test_runtime_cache.py checks
the build cache in depth.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mechgen import runtime
from mechgen.runtime import cbuild
from mechgen.runtime.mechanism import generated_root

BACKENDS = ["c", "python"]
MECHS = {"ur5_arm": 6, "space_arm7": 13}
CASES = [(m, b) for m in MECHS for b in BACKENDS]
IDS = [f"{m}-{b}" for m, b in CASES]

_loaded: dict[tuple[str, str], runtime.Mechanism] = {}


def get(name: str, backend: str) -> runtime.Mechanism:
    key = (name, backend)
    if key not in _loaded:
        _loaded[key] = runtime.load(name, backend)
    return _loaded[key]


@pytest.fixture(params=CASES, ids=IDS)
def mech(request):
    return get(*request.param)


def random_input(mech, name: str, size: int, rng, batch: int | None = None) -> np.ndarray:
    shape = (size,) if batch is None else (batch, size)
    if name == "p":
        return rng.uniform(20.0, 200.0, shape)          # payload mass
    if name == "q":
        return rng.uniform(-np.pi, np.pi, shape)
    return rng.uniform(-2.0, 2.0, shape)               # qd, qdd, Q


def good_args(mech, kernel, rng, batch=None) -> list[np.ndarray]:
    return [random_input(mech, n, s, rng, batch) for n, s in mech.kernels[kernel].inputs]


def kernel_inputs(mech):
    """(kernel name, input index, input name, size) for every input of every kernel."""
    return [(k, i, n, s) for k, kern in mech.kernels.items()
            for i, (n, s) in enumerate(kern.inputs)]


def expect_argument_error(mech, kernel, args, name, *fragments):
    with pytest.raises(ValueError, match=rf"^{kernel}: argument '{name}'") as info:
        mech.kernels[kernel](*args)
    for f in fragments:
        assert f in str(info.value), (f, str(info.value))


def test_manifest_basics(mech):
    assert mech.n == MECHS[mech.name]
    assert mech.parameters == ([] if mech.name == "ur5_arm" else ["m_payload"])
    derivatives = ({"inverse_dynamics_derivatives", "forward_dynamics_derivatives"}
                   if mech.name == "ur5_arm" else set())   # [kernels] derivatives = true
    assert set(mech.kernels) == {"forward_kinematics", "jacobians", "velocities", "mass_matrix",
                                 "bias", "inverse_dynamics", "forward_dynamics",
                                 "energy"} | derivatives
    assert mech.mass_matrix is mech.kernels["mass_matrix"]
    with pytest.raises(AttributeError, match="has no kernel 'nope'"):
        mech.nope


# --- bad input arrays -----------------------------------------------------------------------

def test_float32_input(mech):
    rng = np.random.default_rng(1)
    for k, i, name, size in kernel_inputs(mech):
        args = good_args(mech, k, rng)
        args[i] = args[i].astype(np.float32)
        expect_argument_error(mech, k, args, name, "must be float64", "float32")


def test_integer_array_input(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(2))
    args[0] = np.zeros(mech.n, dtype=np.int64)
    expect_argument_error(mech, "mass_matrix", args, "q", "must be float64")


def test_non_contiguous_input(mech):
    rng = np.random.default_rng(3)
    for k, i, name, size in kernel_inputs(mech):
        batch = good_args(mech, k, rng, batch=3)
        batch[i] = np.zeros((3, 2 * size))[:, ::2]                    # strided columns
        assert batch[i].shape == (3, size) and not batch[i].flags.c_contiguous
        expect_argument_error(mech, k, batch, name, "C-contiguous")
        if size == 1:      # one element per row: strided 1-D and transposed are contiguous
            continue
        single = good_args(mech, k, rng)
        single[i] = np.zeros(2 * size)[::2]                           # strided 1-D
        assert single[i].shape == (size,) and not single[i].flags.c_contiguous
        expect_argument_error(mech, k, single, name, "C-contiguous")
        batch = good_args(mech, k, rng, batch=3)
        batch[i] = np.zeros((size, 3)).T                              # transposed
        assert batch[i].shape == (3, size) and not batch[i].flags.c_contiguous
        expect_argument_error(mech, k, batch, name, "C-contiguous")


def test_wrong_size_input(mech):
    rng = np.random.default_rng(4)
    for k, i, name, size in kernel_inputs(mech):
        for bad in [np.zeros(size + 1), np.zeros(max(size - 1, 0)), np.zeros((2, size + 2))]:
            args = good_args(mech, k, rng)
            args[i] = bad
            expect_argument_error(mech, k, args, name, f"must have shape ({size},) or (N, {size})",
                                  str(bad.shape))


def test_three_dimensional_and_scalar_input(mech):
    rng = np.random.default_rng(5)
    for k, i, name, size in kernel_inputs(mech):
        for bad in [np.zeros((2, 1, size)), np.zeros((1, 1, size)), np.float64(0.0)]:
            args = good_args(mech, k, rng)
            args[i] = bad
            expect_argument_error(mech, k, args, name, "must have shape")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_inputs(mech, bad):
    rng = np.random.default_rng(6)
    for k, i, name, size in kernel_inputs(mech):
        args = good_args(mech, k, rng)
        args[i][size - 1] = bad
        expect_argument_error(mech, k, args, name, "NaN or inf", f"index ({size - 1},)")
        args = good_args(mech, k, rng, batch=4)
        args[i][2, 0] = bad
        expect_argument_error(mech, k, args, name, "NaN or inf", "index (2, 0)")
        args = [a.tolist() for a in good_args(mech, k, rng)]          # lists are checked too
        args[i][0] = float(bad)
        expect_argument_error(mech, k, args, name, "NaN or inf")


def test_unreadable_list_input(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(7))
    args[0] = ["a"] * mech.n
    expect_argument_error(mech, "mass_matrix", args, "q", "cannot be read as float64")


class _HidesNaN(np.ndarray):
    """An ndarray subclass whose ufuncs report every element finite (its data holds a NaN)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.ones(self.shape, dtype=bool)


def test_masked_array_input_is_rejected(mech):
    q = random_input(mech, "q", mech.n, np.random.default_rng(30))
    args = good_args(mech, "mass_matrix", np.random.default_rng(30))
    hidden_nan = q.copy()
    hidden_nan[0] = np.nan
    for masked in [np.ma.masked_array(hidden_nan, mask=[True] + [False] * (mech.n - 1)),
                   np.ma.masked_array(q)]:                         # nothing masked: rejected too
        args[0] = masked
        expect_argument_error(mech, "mass_matrix", args, "q", "masked array", "a.filled")


def test_nan_inside_an_ndarray_subclass_is_found(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(31))
    q = args[0].copy()
    q[1] = np.nan
    args[0] = q.view(_HidesNaN)
    assert np.isfinite(args[0]).all()                 # the subclass hides the NaN from ufuncs
    expect_argument_error(mech, "mass_matrix", args, "q", "NaN or inf", "index (1,)")


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_matrix_input_is_read_as_a_plain_batch(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(32))
    expected = mech.mass_matrix(*[a[None, :] for a in args])
    got = mech.mass_matrix(*[np.matrix(a) for a in args])
    assert type(got) is np.ndarray and got.shape == (1, mech.n, mech.n)
    np.testing.assert_array_equal(got, expected)


def unreadable_values(n: int) -> list[tuple[object, str]]:
    """(value for an input of size n, a fragment of the expected error)."""
    return [([10 ** 400] + [0] * (n - 1), "index (0,) is too large for float64"),
            ([0.0] * (n - 1) + [1j], "complex numbers"),
            ([0.0] * (n - 1) + [None], "got None at index"),
            ([None] * n, "got None"),
            (None, "got None"),
            ("abc", "got str 'abc'"),
            (b"abcdef", "got bytes"),
            (["1.0"] * n, "strings"),
            ([True] * n, "booleans"),
            ([0.0] * (n - 1) + [object()], "got object")]


def test_unreadable_values_name_the_argument(mech):
    base = good_args(mech, "mass_matrix", np.random.default_rng(33))
    for value, fragment in unreadable_values(mech.n):
        args = [base[0].copy(), *base[1:]]
        args[0] = value
        expect_argument_error(mech, "mass_matrix", args, "q", "cannot be read as float64"
                              if "too large" not in fragment else "number", fragment)


def test_big_but_finite_integers_are_converted(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(34))
    q = [2 ** 64] + [0] * (mech.n - 1)                # numpy keeps it as a Python int object
    args[0] = np.array(q, dtype=np.float64)
    expected = mech.mass_matrix(*args)
    args[0] = q
    np.testing.assert_array_equal(mech.mass_matrix(*args), expected)


def bad_calls(mech) -> list[tuple[str, tuple, dict]]:
    """(kernel, args, kwargs) of calls that must fail the same way on both backends."""
    rng = np.random.default_rng(35)
    q, qd, Q, *p = good_args(mech, "forward_dynamics", rng)
    kw = {"p": p[0]} if p else {}
    n = mech.n
    masked = np.ma.masked_array(q, mask=[True] + [False] * (n - 1))
    return [("mass_matrix", (q, *p, q), {}),                           # one too many
            ("forward_dynamics", (q,), kw),                            # missing inputs
            ("forward_dynamics", (q, qd, Q), {"qdot": qd, **kw}),      # unknown keyword
            ("forward_dynamics", (q, qd, Q, *p), {"q": q}),             # given twice
            ("mass_matrix", (masked, *p), {}),
            ("mass_matrix", ([10 ** 400] * n, *p), {}),
            ("mass_matrix", (np.zeros((2, 1, n)), *p), {}),
            ("mass_matrix", (np.zeros(n + 1), *p), {}),
            ("forward_dynamics", (q, np.zeros((2, n)), Q, *p), {}),     # mixed single / batch
            ("mass_matrix", (q.astype(np.float32), *p), {})]


def failure(call) -> tuple[str, str]:
    try:
        call()
    except Exception as e:                # noqa: BLE001 -- the failure itself is compared
        return type(e).__name__, str(e)
    return "no error", ""


@pytest.mark.parametrize("name", list(MECHS))
def test_python_and_c_backends_raise_the_same_errors(name):
    c, py = get(name, "c"), get(name, "python")
    for kernel, args, kwargs in bad_calls(c):
        err_c = failure(lambda: c.kernels[kernel](*args, **kwargs))
        err_py = failure(lambda: py.kernels[kernel](*args, **kwargs))
        assert err_c[0] in ("TypeError", "ValueError"), (kernel, err_c)
        assert err_c == err_py, kernel


def test_mixing_single_and_batch_inputs(mech):
    rng = np.random.default_rng(8)
    args = good_args(mech, "forward_dynamics", rng)
    args[1] = random_input(mech, "qd", mech.n, rng, batch=2)
    with pytest.raises(ValueError, match="forward_dynamics: mix of single-state and batch inputs"):
        mech.forward_dynamics(*args)


def test_batch_inputs_of_different_lengths(mech):
    rng = np.random.default_rng(9)
    args = good_args(mech, "forward_dynamics", rng, batch=3)
    args[2] = random_input(mech, "Q", mech.n, rng, batch=4)
    with pytest.raises(ValueError, match="forward_dynamics: batch inputs differ in length") as info:
        mech.forward_dynamics(*args)
    assert f"Q: (4, {mech.n})" in str(info.value) and f"q: (3, {mech.n})" in str(info.value)


# --- binding the arguments (TypeError, as for a Python function) ----------------------------

def test_unknown_keyword(mech):
    q, qd, Q, *p = good_args(mech, "forward_dynamics", np.random.default_rng(10))
    kw = {"p": p[0]} if p else {}
    with pytest.raises(TypeError, match="forward_dynamics\\(\\) has no input 'qdot'"):
        mech.forward_dynamics(q, qd, Q, qdot=qd, **kw)


def test_missing_input(mech):
    q, qd, Q, *p = good_args(mech, "forward_dynamics", np.random.default_rng(11))
    kw = {"p": p[0]} if p else {}
    with pytest.raises(TypeError, match=r"forward_dynamics\(\) missing input\(s\): Q$"):
        mech.forward_dynamics(q, qd, **kw)
    with pytest.raises(TypeError, match=r"missing input\(s\): qd, Q$"):
        mech.forward_dynamics(q, **kw)


def test_too_many_positional_arguments(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(12))
    with pytest.raises(TypeError, match=r"mass_matrix\(\) takes \d inputs .* got \d"):
        mech.mass_matrix(*args, args[0])


def test_input_given_twice(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(13))
    with pytest.raises(TypeError, match="got 'q' twice"):
        mech.mass_matrix(*args, q=args[0])


def test_bad_errors_mode(mech):
    args = good_args(mech, "mass_matrix", np.random.default_rng(14))
    with pytest.raises(ValueError, match="errors must be 'raise' or 'nan'"):
        mech.mass_matrix(*args, errors="ignore")


# --- parameters -----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_params_without_parameters(backend):
    arm = get("ur5_arm", backend)
    assert arm.params().shape == (0,)
    with pytest.raises(ValueError, match=r"ur5_arm: unknown parameter\(s\) \['m_payload'\]"):
        arm.params(m_payload=1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_params_missing_and_unknown(backend):
    sc = get("space_arm7", backend)
    np.testing.assert_array_equal(sc.params(m_payload=150.0), [150.0])
    np.testing.assert_array_equal(sc.params({"m_payload": 20}), [20.0])
    with pytest.raises(ValueError, match=r"space_arm7: unknown parameter\(s\) \['m_payload2'\]"):
        sc.params(m_payload=1.0, m_payload2=2.0)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['mass'\]"):
        sc.params({"mass": 1.0})


# --- parameter defaults ---------------------------------------------------------------------

def pendulum_builder(name: str, defaults: dict[str, float]):
    """A 1-joint pendulum whose point mass m_bob hangs at l_bob: mass matrix m_bob l_bob^2."""
    from mechgen.generator.families.serial.spec import ChainBuilder
    return ChainBuilder(name, gravity=(0, 0, -9.81), parameters=defaults).joint(
        "swing", "Ry", body={"name": "bob", "mass": "m_bob", "com": [0, 0, "l_bob"]})


@pytest.fixture(scope="module")
def pendulums(tmp_path_factory) -> tuple[Path, dict[tuple[str, str], runtime.Mechanism]]:
    """pend_all (both parameters have defaults) and pend_partial (l_bob has none), loaded with
    both backends; C builds go to a temporary cache."""
    import mechgen
    out = tmp_path_factory.mktemp("pendulums")
    loaded = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MECHGEN_CACHE", str(out / "cache"))
        for name, defaults in [("pend_all", {"m_bob": 2.0, "l_bob": 0.5}),
                               ("pend_partial", {"m_bob": 2.0})]:
            mechgen.generate(pendulum_builder(name, defaults), out=out / "gen")
            for b in BACKENDS:
                loaded[name, b] = runtime.load(name, b, generated=out / "gen")
    return out / "gen", loaded


@pytest.mark.parametrize("backend", BACKENDS)
def test_omitted_p_uses_the_spec_defaults(pendulums, backend):
    pend = pendulums[1]["pend_all", backend]
    assert pend.manifest["parameter_defaults"] == {"m_bob": 2.0, "l_bob": 0.5}
    q = np.array([0.3])
    np.testing.assert_allclose(pend.mass_matrix(q), [[2.0 * 0.5 ** 2]], rtol=1e-14)
    np.testing.assert_array_equal(pend.mass_matrix(q, p=None), pend.mass_matrix(q))
    np.testing.assert_array_equal(pend.mass_matrix(q, pend.params()), pend.mass_matrix(q))
    np.testing.assert_allclose(pend.mass_matrix(q, p={"l_bob": 1.0}), [[2.0]], rtol=1e-14)
    np.testing.assert_array_equal(pend.params(l_bob=1.0), pend.params({"l_bob": 1.0, "m_bob": 2}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_omitted_p_without_a_default_names_the_parameter(pendulums, backend):
    pend = pendulums[1]["pend_partial", backend]
    assert pend.manifest["parameter_defaults"] == {"m_bob": 2.0, "l_bob": None}
    q = np.array([0.3])
    with pytest.raises(TypeError, match=r"^mass_matrix\(\) missing input\(s\): p \(no default "
                                        r"for parameter\(s\) \['l_bob'\]: pass p="):
        pend.mass_matrix(q)
    with pytest.raises(TypeError, match=r"missing input\(s\): p \(no default"):
        pend.mass_matrix(q, p=None)
    with pytest.raises(ValueError, match=r"pend_partial: missing parameter\(s\) \['l_bob'\] "
                                         r"\(the spec has no default for them\); pass p="):
        pend.params()
    with pytest.raises(ValueError, match=r"missing parameter\(s\) \['l_bob'\]"):
        pend.mass_matrix(q, p={"m_bob": 1.0})
    np.testing.assert_allclose(pend.mass_matrix(q, p={"l_bob": 1.0}), [[2.0]], rtol=1e-14)
    np.testing.assert_allclose(pend.mass_matrix(q, pend.params(l_bob=2.0)), [[8.0]], rtol=1e-14)


@pytest.mark.parametrize("backend", BACKENDS)
def test_single_p_is_broadcast_over_a_batch_of_states(pendulums, backend):
    pend = pendulums[1]["pend_all", backend]
    rng = np.random.default_rng(40)
    q, qd, Q = (rng.uniform(-1, 1, (4, 1)) for _ in range(3))
    p = pend.params(l_bob=0.7, m_bob=3.0)
    batch = pend.forward_dynamics(q, qd, Q, p)
    assert batch.shape == (4, 1)
    np.testing.assert_array_equal(batch, pend.forward_dynamics(q, qd, Q, np.tile(p, (4, 1))))
    np.testing.assert_array_equal(batch, pend.forward_dynamics(q, qd, Q, p.tolist()))
    np.testing.assert_array_equal(batch, pend.forward_dynamics(q, qd, Q,
                                                               p={"l_bob": 0.7, "m_bob": 3.0}))
    for i in range(4):
        np.testing.assert_array_equal(batch[i], pend.forward_dynamics(q[i], qd[i], Q[i], p))
    np.testing.assert_array_equal(pend.mass_matrix(q), pend.mass_matrix(q, pend.params()))
    assert pend.mass_matrix(np.zeros((0, 1)), p).shape == (0, 1, 1)
    with pytest.raises(ValueError, match="forward_dynamics: mix of single-state and batch"):
        pend.forward_dynamics(q, qd[0], Q, p)                 # states still may not mix
    with pytest.raises(ValueError, match="mass_matrix: mix of single-state and batch"):
        pend.mass_matrix(q[0], np.tile(p, (4, 1)))            # a batch of p, one state
    with pytest.raises(ValueError, match="forward_dynamics: batch inputs differ in length"):
        pend.forward_dynamics(q, qd, Q, np.tile(p, (3, 1)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_rhs_uses_parameter_defaults(pendulums, backend):
    full, partial = pendulums[1]["pend_all", backend], pendulums[1]["pend_partial", backend]
    x = np.array([0.4, -0.2])
    np.testing.assert_array_equal(full.rhs()(0.0, x), full.rhs(p=full.params())(0.0, x))
    np.testing.assert_array_equal(full.rhs(p={"l_bob": 1.0})(0.0, x),
                                  full.rhs(p=full.params(l_bob=1.0))(0.0, x))
    # the pendulum equation: qdd = -g sin(q) / l (about y, mass below the pivot... at +z)
    np.testing.assert_allclose(full.rhs(p={"l_bob": 1.0})(0.0, x)[1], 9.81 * np.sin(0.4),
                               rtol=1e-12)
    with pytest.raises(ValueError, match=r"pend_partial: missing parameter\(s\) \['l_bob'\].*"
                                         r"pass p="):
        partial.rhs()
    np.testing.assert_array_equal(partial.rhs(p={"l_bob": 0.5})(0.0, x), full.rhs()(0.0, x))
    with pytest.raises(ValueError, match=r"rhs: argument 'p' must have shape \(2,\), got \(2, 2\)"):
        full.rhs(p=np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"rhs: argument 'p' must have shape \(2,\) or"):
        full.rhs(p=[1.0])


NOT_FINITE_NUMBERS = ["150", float("nan"), float("inf"), None, True, 1j, 10 ** 400, [1.0],
                      np.array([1.0])]


@pytest.mark.parametrize("bad", NOT_FINITE_NUMBERS, ids=repr)
def test_parameter_values_must_be_finite_numbers(pendulums, bad):
    pend = pendulums[1]["pend_all", "python"]
    message = r"pend_all: parameter 'm_bob' must be a finite real number"
    with pytest.raises(ValueError, match=message):
        pend.params(m_bob=bad)
    with pytest.raises(ValueError, match=message):
        pend.params({"m_bob": bad})
    with pytest.raises(ValueError, match=message):
        pend.mass_matrix([0.1], p={"m_bob": bad})
    with pytest.raises(ValueError, match=message):
        pend.rhs(p={"m_bob": bad})


def test_params_needs_a_dict(pendulums):
    pend = pendulums[1]["pend_all", "python"]
    with pytest.raises(ValueError, match=r"pend_all: params: expected a dict \{name: value\}"):
        pend.params([2.0, 0.5])


@pytest.mark.parametrize("defaults, fragment", [
    ({"m_bob": "heavy"}, "parameter_defaults.m_bob must be a finite number or null, got 'heavy'"),
    ({"m_bob": True}, "parameter_defaults.m_bob must be a finite number or null"),
    ({"nope": 1.0}, "'parameter_defaults' names unknown parameter(s) ['nope']"),
    ([1.0, 2.0], "'parameter_defaults' must be an object"),
])
def test_bad_parameter_defaults_in_the_manifest_name_the_file(pendulums, tmp_path, defaults,
                                                              fragment):
    folder = tmp_path / "pend_all"
    shutil.copytree(pendulums[0] / "pend_all", folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["parameter_defaults"] = defaults
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError) as info:
        runtime.load("pend_all", "python", generated=tmp_path)
    assert str(info.value).startswith(str(folder / "manifest.json")) and fragment in str(info.value)


def test_manifest_without_parameter_defaults_needs_p(pendulums, tmp_path):
    folder = tmp_path / "pend_all"
    shutil.copytree(pendulums[0] / "pend_all", folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["parameter_defaults"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    pend = runtime.load("pend_all", "python", generated=tmp_path)
    with pytest.raises(TypeError, match=r"no default for parameter\(s\) \['l_bob', 'm_bob'\]"):
        pend.mass_matrix([0.1])
    np.testing.assert_allclose(pend.mass_matrix([0.1], p={"l_bob": 1.0, "m_bob": 3.0}), [[3.0]])


def test_platform_rhs_and_newton_ik_use_parameter_defaults():
    from mechgen.runtime.platform import newton_ik, platform_rhs
    hexa = get("gough_stewart_docking", "python")
    defaults = hexa.manifest["parameter_defaults"]
    assert set(defaults) == set(hexa.parameters) and None not in defaults.values()
    x = np.array([0.0, 0.0, 0.56, 0.01, 0.0, 0.02])
    s = np.concatenate([x, np.zeros(6)])
    base = platform_rhs(hexa)(0.0, s)
    np.testing.assert_array_equal(base, platform_rhs(hexa, p=hexa.params())(0.0, s))
    heavy = platform_rhs(hexa, p={"m_ring": 400.0})(0.0, s)
    np.testing.assert_array_equal(heavy, platform_rhs(hexa, p=hexa.params(m_ring=400.0))(0.0, s))
    assert np.abs(heavy[6:] - base[6:]).max() > 1e-3        # a heavier ring accelerates otherwise
    q = newton_ik(hexa, x)
    np.testing.assert_array_equal(q, newton_ik(hexa, x, p={"m_ring": 400.0}))
    qs = newton_ik(hexa, np.tile(x, (3, 1)), p=hexa.params())      # one p for a batch of poses
    np.testing.assert_array_equal(qs, np.tile(q, (3, 1)))
    with pytest.raises(ValueError, match=r"parameter 'm_ring' must be a finite real number"):
        platform_rhs(hexa, p={"m_ring": float("nan")})
    with pytest.raises(ValueError, match=r"parameter 'm_ring' must be a finite real number"):
        newton_ik(hexa, x, p={"m_ring": "heavy"})
    with pytest.raises(ValueError, match=r"^platform_rhs: argument 'p': cannot be read"):
        platform_rhs(hexa, p="abc")
    n_p = len(hexa.params())
    with pytest.raises(ValueError, match=rf"^platform_rhs: argument .p. must have shape \({n_p},\) or"):
        platform_rhs(hexa, p=np.ones((2, n_p - 2)))


# --- load() ---------------------------------------------------------------------------------

def test_load_unknown_mechanism():
    with pytest.raises(ValueError, match=r"no generated mechanism 'no_such_arm' in .*available: "
                                         r"\[.*'space_arm7'.*'ur5_arm'.*\]"):
        runtime.load("no_such_arm", "python")


@pytest.mark.parametrize("name", ["", "1arm", "ur5 arm", None, 5])
def test_load_invalid_name(name):
    with pytest.raises(ValueError, match="mechanism name .* is not a valid name"):
        runtime.load(name, "python")


@pytest.mark.parametrize("path", ["../x", "../generated/ur5_arm", "ur5_arm/", "/tmp"])
def test_load_path_without_a_manifest_is_refused_naming_it(path):
    with pytest.raises(ValueError, match="not a generated mechanism folder"):
        runtime.load(path, "python")


def test_load_accepts_a_generated_folder_path(monkeypatch):
    monkeypatch.chdir(generated_root().parent)
    mech = runtime.load("generated/ur5_arm", "python")
    assert mech.name == "ur5_arm" and mech.n == 6


@pytest.mark.parametrize("backend", ["C", "cffi", "numpy", "", None])
def test_load_bad_backend(backend):
    with pytest.raises(ValueError, match=r"ur5_arm: no backend .*; available: c, python \("):
        runtime.load("ur5_arm", backend)


def test_load_from_empty_root(tmp_path):
    with pytest.raises(ValueError, match=r"no generated mechanism 'ur5_arm' .*available: \[\]"):
        runtime.load("ur5_arm", "python", generated=tmp_path)
    with pytest.raises(ValueError, match=r"available: \[\]"):
        runtime.load("ur5_arm", "python", generated=tmp_path / "missing")


# --- positive checks ------------------------------------------------------------------------

def test_list_input_works(mech):
    rng = np.random.default_rng(20)
    for k in mech.kernels:
        args = good_args(mech, k, rng)
        a = mech.kernels[k](*args)
        b = mech.kernels[k](*[x.tolist() for x in args])
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            np.testing.assert_array_equal(x, y)
    # a batch as a list of lists
    qs = rng.uniform(-1, 1, (3, mech.n))
    args = [qs] + ([np.full((3, 1), 50.0)] if mech.parameters else [])
    np.testing.assert_array_equal(mech.mass_matrix(*args), mech.mass_matrix(*[a.tolist() for a in args]))


def test_keyword_inputs(mech):
    args = good_args(mech, "forward_dynamics", np.random.default_rng(21))
    names = [n for n, _ in mech.forward_dynamics.inputs]
    kw = dict(zip(names, args))
    np.testing.assert_array_equal(mech.forward_dynamics(*args), mech.forward_dynamics(**kw))
    np.testing.assert_array_equal(mech.forward_dynamics(*args),
                                  mech.forward_dynamics(args[0], **dict(list(kw.items())[1:])))


def outputs_of(res) -> tuple:
    return res if isinstance(res, tuple) else (res,)


def test_single_and_batch_output_shapes(mech):
    rng = np.random.default_rng(22)
    N = 4
    for k, kern in mech.kernels.items():
        shapes = [shape for _, shape in kern.outputs]
        single = outputs_of(kern(*good_args(mech, k, rng)))
        assert [o.shape for o in single] == shapes, k
        batch = outputs_of(kern(*good_args(mech, k, rng, batch=N)))
        assert [o.shape for o in batch] == [(N, *s) for s in shapes], k
        one = outputs_of(kern(*good_args(mech, k, rng, batch=1)))
        assert [o.shape for o in one] == [(1, *s) for s in shapes], k
        empty = outputs_of(kern(*good_args(mech, k, rng, batch=0)))
        assert [o.shape for o in empty] == [(0, *s) for s in shapes], k
    n = mech.n
    assert mech.mass_matrix.outputs == [("A", (n, n))]
    assert mech.forward_dynamics.outputs == [("qdd", (n,))]


def test_batch_equals_single_row_by_row(mech):
    rng = np.random.default_rng(23)
    N = 5
    for k, kern in mech.kernels.items():
        args = good_args(mech, k, rng, batch=N)
        batch = outputs_of(kern(*args))
        for i in range(N):
            single = outputs_of(kern(*[a[i].copy() for a in args]))
            for b, s in zip(batch, single):
                np.testing.assert_array_equal(b[i], s, err_msg=f"{k} row {i}")


@pytest.mark.parametrize("name", list(MECHS))
def test_c_and_python_backends_agree(name):
    c, py = get(name, "c"), get(name, "python")
    rng = np.random.default_rng(24)
    for k in c.kernels:
        for batch in (None, 6):
            args = good_args(c, k, rng, batch=batch)
            rc, rp = outputs_of(c.kernels[k](*args)), outputs_of(py.kernels[k](*args))
            assert len(rc) == len(rp)
            for (out, _), x, y in zip(c.kernels[k].outputs, rc, rp):
                assert np.isfinite(x).all() and np.isfinite(y).all()
                scale = max(np.abs(y).max(), 1e-300)
                assert np.abs(x - y).max() <= 1e-12 * scale, f"{name}.{k}.{out}"


def test_kernel_results_are_consistent(mech):
    """A light sanity check that the values are dynamics: A qdd = b and inverse dynamics."""
    rng = np.random.default_rng(25)
    q, qd, Q, *p = good_args(mech, "forward_dynamics", rng)
    qdd = mech.forward_dynamics(q, qd, Q, *p)
    A = mech.mass_matrix(q, *p)
    b = mech.bias(q, qd, Q, *p)
    np.testing.assert_allclose(A, A.T, atol=1e-12 * np.abs(A).max())
    assert np.linalg.eigvalsh(A).min() > 0
    np.testing.assert_allclose(A @ qdd, b, rtol=1e-9, atol=1e-9 * np.abs(b).max())
    np.testing.assert_allclose(mech.inverse_dynamics(q, qd, qdd, *p), Q, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_rhs_with_solve_ivp_conserves_energy(backend):
    from scipy.integrate import solve_ivp
    arm = get("ur5_arm", backend)
    n = arm.n
    x0 = np.concatenate([[0.1, -1.2, 1.5, -0.4, 1.3, 0.2], [0.3, -0.2, 0.5, 0.1, -0.4, 0.6]])
    f = arm.rhs()
    dx = f(0.0, x0)
    assert dx.shape == (2 * n,)
    np.testing.assert_array_equal(dx[:n], x0[n:])
    sol = solve_ivp(f, (0.0, 0.3), x0, method="DOP853", rtol=1e-10, atol=1e-10)
    assert sol.success
    E = np.array([float(T[0] + V[0]) for T, V in (arm.energy(x[:n], x[n:]) for x in sol.y.T)])
    assert np.abs(E - E[0]).max() <= 1e-7 * max(1.0, abs(E[0]))
    # a constant drive equal to the holding torques keeps the arm at rest
    q0 = x0[:n]
    hold = arm.inverse_dynamics(q0, np.zeros(n), np.zeros(n))
    sol = solve_ivp(arm.rhs(hold), (0.0, 0.2), np.concatenate([q0, np.zeros(n)]), rtol=1e-10,
                    atol=1e-12)
    assert sol.success and np.abs(sol.y[:, -1] - sol.y[:, 0]).max() < 1e-8


@pytest.mark.parametrize("backend", BACKENDS)
def test_rhs_with_parameters_and_drive_function(backend):
    from scipy.integrate import solve_ivp
    sc = get("space_arm7", backend)
    n = sc.n
    q0 = np.zeros(n)
    q0[6:] = [0.2, -0.3, 0.8, -1.2, 0.5, 0.3, 0.1]
    x0 = np.concatenate([q0, np.zeros(n)])
    drive = lambda t, q, qd: np.where(np.arange(n) == 8, 40.0, 0.0)
    f_dict = sc.rhs(drive, {"m_payload": 150.0})
    f_arr = sc.rhs(drive, sc.params(m_payload=150.0))
    np.testing.assert_array_equal(f_dict(0.0, x0), f_arr(0.0, x0))
    sol = solve_ivp(f_dict, (0.0, 0.1), x0, rtol=1e-8, atol=1e-10)
    assert sol.success and np.isfinite(sol.y).all()
    # the free base reacts to the driven joint: no external force, so the spacecraft moves
    assert np.abs(sol.y[n:n + 6, -1]).max() > 0
    with pytest.raises(ValueError, match=r"rhs: argument 'Q' must have shape"):
        sc.rhs(np.zeros(n + 1), [150.0])
    with pytest.raises(ValueError, match=r"rhs: state x must have shape \(26,\)"):
        f_arr(0.0, np.zeros(2 * n - 1))


# --- the C build cache ----------------------------------------------------------------------

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _modules(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if not p.name.startswith("."))


def test_cache_builds_once_and_reuses(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("MECHGEN_CACHE", str(cache))
    assert cbuild.cache_dir() == cache and _modules(cache) == []
    first = runtime.load("ur5_arm", "c")
    mods = _modules(cache)
    assert len(mods) == 1 and mods[0].name.startswith("_mechgen_ur5_arm_")
    so = mods[0] / f"{mods[0].name}{SUFFIX}"
    checksum = so.with_name(so.name + ".sha256")
    assert sorted(p.name for p in mods[0].iterdir()) == [so.name, checksum.name]
    assert checksum.read_text().strip() == hashlib.sha256(so.read_bytes()).hexdigest()
    assert not any(p.name.startswith(".build") for p in cache.iterdir())  # no leftover build dir
    mtime = so.stat().st_mtime_ns

    def no_compile(*a, **k):
        raise AssertionError("the cached module was rebuilt")

    monkeypatch.setattr(cbuild, "_compile", no_compile)
    second = runtime.load("ur5_arm", "c")
    assert _modules(cache) == mods and so.stat().st_mtime_ns == mtime
    q = np.array([0.1, -1.2, 1.5, -0.4, 1.3, 0.2])
    np.testing.assert_array_equal(first.mass_matrix(q), second.mass_matrix(q))


def test_edited_kernel_gets_a_new_module(tmp_path, monkeypatch):
    src = generated_root() / "ur5_arm"
    original = runtime.load("ur5_arm", "c")                 # the default cache
    orig_name = cbuild.load_c(src, json.loads((src / "manifest.json").read_text())).__name__

    root = tmp_path / "gen"
    shutil.copytree(src, root / "ur5_arm")
    c_file = root / "ur5_arm" / "ur5_arm.c"
    text = c_file.read_text()
    tool = re.compile(r"(?<![\d.eE])0\.0823(?![\d])")       # the tool offset (fk, jacobians)
    assert tool.search(text)
    c_file.write_text(tool.sub("0.1823", text))

    cache = tmp_path / "cache"
    monkeypatch.setenv("MECHGEN_CACHE", str(cache))
    edited = runtime.load("ur5_arm", "c", generated=root)
    manifest = json.loads((root / "ur5_arm" / "manifest.json").read_text())
    new_name = cbuild.load_c(root / "ur5_arm", manifest).__name__
    mods = _modules(cache)
    assert [m.name for m in mods] == [new_name]
    assert new_name.startswith("_mechgen_ur5_arm_") and new_name != orig_name

    q = np.array([0.1, -1.2, 1.5, -0.4, 1.3, 0.2])
    r0, tau0 = original.forward_kinematics(q)
    r1, tau1 = edited.forward_kinematics(q)
    np.testing.assert_array_equal(r1[:6], r0[:6])          # the bodies did not move
    np.testing.assert_array_equal(tau1, tau0)
    np.testing.assert_allclose(r1[6] - r1[5], (0.1823 / 0.0823) * (r0[6] - r0[5]), rtol=1e-12)
    assert np.linalg.norm(r1[6] - r1[5]) == pytest.approx(0.1823, rel=1e-12)
    # the Python file was not edited: its kernels still give the original tool position
    np.testing.assert_allclose(runtime.load("ur5_arm", "python", generated=root)
                               .forward_kinematics(q)[0], r0, rtol=1e-12, atol=1e-15)


# --- kernel status: a singular mass matrix --------------------------------------------------

PENDULUM = """\
# A spherical pendulum: yaw about z (no body of its own), then pitch about y, then a point
# mass 1 m along the pitched z axis. At pitch = 0 the mass sits on the yaw axis, so the yaw
# row of the mass matrix is zero (m sin^2 pitch) and the L D L^T pivot D1 fails.
[mechanism]
name = "sph_pendulum"
gravity = [0, 0, -9.81]

[[joints]]
name = "yaw"
type = "Rz"

[[joints]]
name = "pitch"
type = "Ry"
body = { name = "bob", mass = 2.0, com = [0, 0, 1.0] }
"""


@pytest.fixture(scope="module")
def pendulum_root(tmp_path_factory) -> Path:
    from mechgen.generator.build import files_for_spec, write_files
    d = tmp_path_factory.mktemp("pendulum")
    path = d / "sph_pendulum.toml"
    path.write_text(PENDULUM)
    chain, _, files = files_for_spec(path)
    root = d / "generated"
    write_files(root / chain.name, files)
    return root


@pytest.mark.parametrize("backend", BACKENDS)
def test_singular_mass_matrix_status(pendulum_root, backend):
    pend = runtime.load("sph_pendulum", backend, generated=pendulum_root)
    assert pend.n == 2
    assert pend.forward_dynamics.statuses == {1: "mass matrix not positive definite"}
    z = np.zeros(2)
    # on the axis: singular
    A = pend.mass_matrix(np.array([0.3, 0.0]))
    np.testing.assert_array_equal(A, [[0.0, 0.0], [0.0, 2.0]])
    with pytest.raises(runtime.KernelStatusError, match="forward_dynamics: mass matrix not "
                                                        "positive definite at this state") as info:
        pend.forward_dynamics(np.array([0.3, 0.0]), z, z)
    np.testing.assert_array_equal(info.value.status, [1])
    assert isinstance(info.value, ValueError)
    assert np.isnan(pend.forward_dynamics(np.array([0.3, 0.0]), z, z, errors="nan")).all()
    # off the axis: fine, qdd = [0, g sin(pitch)] at rest with no drive
    qdd = pend.forward_dynamics(np.array([0.3, 0.5]), z, z)
    np.testing.assert_allclose(qdd, [0.0, 9.81 * np.sin(0.5)], rtol=1e-12, atol=1e-14)

    q = np.array([[0.3, 0.0], [0.3, 0.5], [-1.0, 0.0], [2.0, -1.0], [0.0, 0.0]])
    Z = np.zeros_like(q)
    with pytest.raises(runtime.KernelStatusError, match=r"positive definite at state\(s\) \[0, 2, 4\]") as info:
        pend.forward_dynamics(q, Z, Z)
    np.testing.assert_array_equal(info.value.status, [1, 0, 1, 0, 1])
    out = pend.forward_dynamics(q, Z, Z, errors="nan")
    assert out.shape == (5, 2)
    bad = np.array([True, False, True, False, True])
    assert np.isnan(out[bad]).all()
    assert np.isfinite(out[~bad]).all()
    np.testing.assert_allclose(out[~bad], [[0.0, 9.81 * np.sin(0.5)], [0.0, 9.81 * np.sin(-1.0)]],
                               rtol=1e-12, atol=1e-14)
    for i in np.flatnonzero(~bad):
        np.testing.assert_array_equal(out[i], pend.forward_dynamics(q[i].copy(), Z[i], Z[i]))
    # kernels without a status never raise at the singular states
    assert np.isfinite(pend.inverse_dynamics(q, Z, Z)).all()


def test_singular_status_long_batch_lists_first_ten(pendulum_root):
    pend = runtime.load("sph_pendulum", "python", generated=pendulum_root)
    q = np.zeros((12, 2))
    Z = np.zeros_like(q)
    with pytest.raises(runtime.KernelStatusError,
                       match=re.escape("state(s) [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] ...")):
        pend.forward_dynamics(q, Z, Z)


def test_help_of_a_kernel_shows_its_inputs_and_outputs_with_shapes_and_docs():
    import pydoc
    arm = get("ur5_arm", "python")
    text = pydoc.render_doc(arm.mass_matrix, renderer=pydoc.plaintext)
    assert "mass_matrix(q" in text and "-> A" in text
    meta = next(k for k in arm.manifest["kernels"] if k["name"] == "mass_matrix")
    for port in meta["inputs"] + meta["outputs"]:
        assert f"{port['name']} {tuple(port['shape'])}" in text
        assert port.get("doc", "") in text
    assert arm.mass_matrix.__doc__ == type(arm.mass_matrix).__doc__
