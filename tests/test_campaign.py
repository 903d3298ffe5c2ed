"""The Monte-Carlo campaign engine (runtime/campaign.py), on toy case functions.

The case functions are defined at module top level so that worker processes (spawned, or Dask
workers) can import them. ``oscillator_cases`` is a damped oscillator's first peak in closed
form; ``raising_cases`` raises for every case id = 3 (mod 7) in its batch; ``killer_cases``
kills its own worker process on case 5.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import sys

import numpy as np
import pytest
from scipy import stats

from mechgen.runtime.campaign import (Envelope, EnvelopeError, Variable, clopper_pearson,
                                      format_summary, plot_capture_map, plot_histograms,
                                      read_csv, run, sample, summarise, to_table, worst_cases,
                                      write_csv, write_parquet)
from mechgen.runtime import campaign

ENVELOPE = {
    "method": "lhs", "cases": 60, "seed": 1,
    "variables": {
        "closing_velocity": {"low": 0.08, "high": 0.18, "unit": "m/s"},
        "lateral": {"low": 0.0, "high": 0.16, "unit": "m"},
    },
}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def oscillator_cases(ids: np.ndarray, x: np.ndarray) -> list[dict]:
    """First peak of a damped oscillator (omega 6 rad/s, zeta 0.3) struck at the closing
    velocity; captured when the stroke plus a lateral penalty stays under 25 mm."""
    omega, zeta = 6.0, 0.3
    wd = omega * math.sqrt(1.0 - zeta ** 2)
    t_peak = math.atan2(wd, zeta * omega) / wd
    gain = math.exp(-zeta * omega * t_peak) * math.sin(wd * t_peak) / wd
    out = []
    for v, y in x:
        stroke = v * gain
        out.append({"stroke": stroke, "force": 4.0e4 * stroke + 80.0 * y,
                    "captured": bool(stroke + 0.1 * y < 0.025),
                    "regime": "hard" if stroke > 0.015 else "soft"})
    return out


def is_bad(case: int) -> bool:
    return case % 7 == 3


def raising_cases(ids: np.ndarray, x: np.ndarray) -> list[dict]:
    """The oscillator, but the whole batch raises when it holds a case id = 3 (mod 7)."""
    for case in ids:
        if is_bad(int(case)):
            raise ValueError(f"case {case} diverged")
    return oscillator_cases(ids, x)


def killer_cases(ids: np.ndarray, x: np.ndarray) -> list[dict]:
    """The oscillator, but case 5 kills the worker process evaluating it (never the test
    process itself)."""
    if 5 in ids:
        if multiprocessing.parent_process() is None:
            raise RuntimeError("killer_cases must run in a worker process")
        os.kill(os.getpid(), signal.SIGKILL)
    return oscillator_cases(ids, x)


def short_cases(ids: np.ndarray, x: np.ndarray) -> list[dict]:
    """Malformed: one result too few."""
    return oscillator_cases(ids, x)[1:]


def envelope(**changes) -> Envelope:
    return Envelope.from_dict({**ENVELOPE, **changes})


def expected_results(x: np.ndarray, bad=lambda case: False) -> list[dict]:
    """What run() must return for the oscillator: one dict per case, errors where ``bad``."""
    out = []
    for case, r in enumerate(oscillator_cases(np.arange(len(x)), x)):
        if bad(case):
            out.append({"case": case, "status": "error",
                        "error": f"ValueError: case {case} diverged"})
        else:
            out.append({"case": case, **r, "status": "ok"})
    return out


# --- envelope --------------------------------------------------------------------------------

def test_envelope_from_dict_keeps_order_units_and_defaults():
    env = envelope()
    assert env.names == ["closing_velocity", "lateral"]
    assert (env.method, env.cases, env.seed) == ("lhs", 60, 1)
    assert env.variables[0] == Variable("closing_velocity", 0.08, 0.18, unit="m/s")
    bare = Envelope.from_dict({"variables": {"a": {"low": 0, "high": 1}}})
    assert (bare.method, bare.cases, bare.seed) == ("lhs", 100, 0)


def _var(**spec):
    return {"variables": {"lateral": {"low": 0.0, "high": 0.16, **spec}}}


@pytest.mark.parametrize("data, message", [
    ({**ENVELOPE, "sampler": "lhs"}, "envelope.sampler: unknown key"),
    (_var(scale=2), "envelope.variables.lateral.scale: unknown key"),
    ({"variables": {"lateral": {"high": 0.1}}}, "envelope.variables.lateral.low: missing"),
    ({"variables": {"lateral": {"low": 0.1}}}, "envelope.variables.lateral.high: missing"),
    ({"variables": {"lateral": {"low": 0.2, "high": 0.1}}},
     "envelope.variables.lateral: low 0.2 > high 0.1"),
    (_var(low=float("nan")), "envelope.variables.lateral.low: must be finite"),
    (_var(high=float("inf")), "envelope.variables.lateral.high: must be finite"),
    (_var(low="0"), "envelope.variables.lateral.low: expected a number"),
    (_var(high=True), "envelope.variables.lateral.high: expected a number"),
    (_var(mean=0.1, std=0.0), "envelope.variables.lateral.std: must be > 0"),
    (_var(mean=0.1, std=-1.0), "envelope.variables.lateral.std: must be > 0"),
    (_var(mean=0.1), "envelope.variables.lateral.std: missing"),
    (_var(std=0.1), "envelope.variables.lateral.mean: missing"),
    (_var(mean=0.5, std=0.1), "envelope.variables.lateral.mean: 0.5 is outside"),
    (_var(unit=3), "envelope.variables.lateral.unit: expected a string"),
    ({**_var(), "method": "sobol"}, "envelope.method: unknown method 'sobol'"),
    ({**_var(), "method": "normal"}, "envelope.variables.lateral: method 'normal' needs"),
    ({**_var(), "cases": 0}, "envelope.cases: must be an integer >= 1"),
    ({**_var(), "cases": 10.0}, "envelope.cases: must be an integer >= 1"),
    ({**_var(), "seed": 1.5}, "envelope.seed: must be a non-negative integer"),
    ({**_var(), "seed": "1"}, "envelope.seed: must be a non-negative integer"),
    ({**_var(), "seed": -1}, "envelope.seed: must be a non-negative integer"),
    ({"variables": {}}, "envelope.variables: at least one variable"),
    ({"cases": 3}, "envelope.variables: missing"),
    ({"variables": {"case": {"low": 0, "high": 1}}}, "envelope.variables.case: the name"),
    ({"variables": {"lateral": [0, 1]}}, "envelope.variables.lateral: expected a table"),
])
def test_envelope_errors_name_the_field(data, message):
    with pytest.raises(EnvelopeError) as err:
        Envelope.from_dict(data)
    assert str(err.value).startswith(message)
    assert isinstance(err.value, ValueError)


# --- sampling --------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["uniform", "normal", "lhs"])
def test_sampling_is_deterministic_for_a_seed(method):
    variables = {"a": {"low": -1.0, "high": 2.0, "mean": 0.5, "std": 0.7},
                 "b": {"low": 0.0, "high": 1.0, "mean": 0.2, "std": 0.3}}
    env = Envelope.from_dict({"method": method, "cases": 50, "seed": 7, "variables": variables})
    x = sample(env)
    assert x.shape == (50, 2)
    assert np.array_equal(x, sample(env))
    assert np.array_equal(x, sample(env, seed=7))
    assert not np.array_equal(x, sample(env, seed=8))


def test_sampling_matches_the_documented_stream():
    """Pinned values: PCG64(1) and the documented LHS algorithm give these bits everywhere."""
    x = sample(envelope(), n=4)
    assert x.tolist() == [[0.13779578630026212, 0.05318926865996369],
                          [0.0905831612243144, 0.15153714813713617],
                          [0.17569256484551105, 0.0121277931716658],
                          [0.11522997840922904, 0.09813991557922606]]
    rng = np.random.Generator(np.random.PCG64(1))
    perm = np.argsort(rng.random(4), kind="stable")
    assert np.array_equal(x[:, 0], 0.08 + (perm + rng.random(4)) / 4 * (0.18 - 0.08))


def test_iid_samples_extend_with_n():
    env = envelope(method="uniform")
    assert np.array_equal(sample(env, n=10), sample(env, n=25)[:10])


@pytest.mark.parametrize("n", [1, 7, 300])
def test_lhs_has_one_sample_per_stratum_per_variable(n):
    env = envelope()
    x = sample(env, n=n)
    for j, v in enumerate(env.variables):
        strata = np.floor((x[:, j] - v.low) / (v.high - v.low) * n).astype(int)
        assert sorted(np.minimum(strata, n - 1)) == list(range(n))


@pytest.mark.parametrize("method", ["uniform", "normal"])
def test_uniform_and_normal_stay_in_bounds(method):
    variables = {"tight": {"low": 0.0, "high": 0.1, "mean": 0.09, "std": 0.5},
                 "point": {"low": 0.3, "high": 0.3, "mean": 0.3, "std": 1.0}}
    env = Envelope.from_dict({"method": method, "cases": 5000, "variables": variables})
    x = sample(env)
    assert np.all((x[:, 0] >= 0.0) & (x[:, 0] <= 0.1))
    assert np.all(x[:, 1] == 0.3)


def test_normal_mean_and_std_match_the_truncated_normal():
    n = 100_000
    variables = {"wide": {"low": -6.0, "high": 6.0, "mean": 0.0, "std": 1.0},
                 "cut": {"low": 1.0, "high": 4.0, "mean": 2.0, "std": 1.5}}
    x = sample(Envelope.from_dict({"method": "normal", "variables": variables}), n=n, seed=3)
    assert abs(x[:, 0].mean()) < 5 / math.sqrt(n)
    assert abs(x[:, 0].std() - 1.0) < 5 / math.sqrt(2 * n)
    cut = stats.truncnorm((1.0 - 2.0) / 1.5, (4.0 - 2.0) / 1.5, loc=2.0, scale=1.5)
    assert abs(x[:, 1].mean() - cut.mean()) < 5 * cut.std() / math.sqrt(n)
    assert abs(x[:, 1].std() - cut.std()) < 0.01 * cut.std()


# --- runner ----------------------------------------------------------------------------------

def test_results_identical_for_one_and_two_workers():
    x = sample(envelope())
    one = run(oscillator_cases, x, workers=1, progress=False)
    two = run(oscillator_cases, x, workers=2, chunk=7, progress=False)
    assert repr(one) == repr(two)                   # bitwise: repr(float) round-trips
    assert one == expected_results(x)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_raising_case_is_recorded_and_its_chunk_mates_kept(workers):
    x = sample(envelope())
    results = run(raising_cases, x, workers=workers, chunk=5, progress=False)
    assert results == expected_results(x, bad=is_bad)
    assert [r["case"] for r in results if r["status"] == "error"] == \
        [c for c in range(len(x)) if is_bad(c)]


def test_a_dying_worker_loses_only_its_case():
    x = sample(envelope(), n=24)
    results = run(killer_cases, x, workers=2, chunk=4, progress=False)
    assert results[5] == {"case": 5, "status": "error",
                          "error": "WorkerDied: the worker process was killed by signal SIGKILL"}
    assert results[:5] + results[6:] == expected_results(x)[:5] + expected_results(x)[6:]


def test_malformed_results_are_errors():
    results = run(short_cases, sample(envelope(), n=3), workers=1, progress=False)
    assert [r["status"] for r in results] == ["error"] * 3
    assert results[0]["error"].startswith("ValueError: case_fn returned 0 results for 1 cases")


def test_an_unpicklable_case_function_is_refused_before_any_work():
    with pytest.raises(TypeError, match="case_fn must be picklable"):
        run(lambda ids, x: [], sample(envelope(), n=4), workers=2, progress=False)


def test_dask_local_cluster_gives_the_same_results():
    pytest.importorskip("dask.distributed",
                        reason="dask[distributed] not installed (optional extra 'campaign')")
    x = sample(envelope(), n=40)
    local = run(raising_cases, x, workers=1, chunk=6, progress=False)
    dask = run(raising_cases, x, scheduler="local", workers=2, chunk=6, progress=False)
    assert repr(dask) == repr(local)
    assert local == expected_results(x, bad=is_bad)


def test_missing_dask_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(ImportError, match=r"dask\[distributed\]"):
        run(oscillator_cases, sample(envelope(), n=2), scheduler="local", progress=False)


def test_progress_prints_a_line_per_tenth_when_not_a_tty(capsys):
    run(oscillator_cases, sample(envelope(), n=50), workers=1, chunk=5)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10
    assert lines[-1].startswith("campaign 50/50 cases 100%") and "cases/s" in lines[-1]
    run(oscillator_cases, sample(envelope(), n=50), workers=1, progress=False)
    assert capsys.readouterr().err == ""


def test_progress_redraws_one_line_on_a_tty():
    class Tty:
        text = ""

        def isatty(self):
            return True

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    stream = Tty()
    bar = campaign._Progress(4, True, stream)
    for _ in range(4):
        bar.advance(1)
    bar.close()
    assert stream.text.startswith("\rcampaign ") and stream.text.endswith("\n")
    assert stream.text.count("\n") == 1 and "4/4 cases 100%" in stream.text


# --- table -----------------------------------------------------------------------------------

def raising_table() -> tuple[dict, np.ndarray]:
    x = sample(envelope())
    return to_table(run(raising_cases, x, workers=1, progress=False), x, envelope()), x


def test_table_columns_order_and_nan_for_errors():
    table, x = raising_table()
    assert list(table) == ["case", "closing_velocity", "lateral", "stroke", "force",
                           "captured", "regime", "status", "error"]
    assert np.array_equal(table["case"], np.arange(60))
    assert np.array_equal(table["lateral"], x[:, 1])
    bad = np.array([is_bad(c) for c in range(60)])
    assert np.all(np.isnan(table["stroke"][bad])) and not np.any(np.isnan(table["stroke"][~bad]))
    assert set(table["captured"][~bad]) <= {0.0, 1.0}
    assert set(table["regime"][bad]) == {""} and set(table["regime"][~bad]) == {"hard", "soft"}
    assert table["error"][3] == "ValueError: case 3 diverged" and table["error"][0] == ""


def test_csv_round_trip(tmp_path):
    table, _ = raising_table()
    table["error"][10] = 'line one, "quoted"\nline two'
    back = read_csv(write_csv(table, tmp_path / "campaign.csv"))
    assert list(back) == list(table)
    for name, column in table.items():
        assert back[name].dtype.kind == column.dtype.kind, name
        if column.dtype.kind == "f":
            assert np.array_equal(back[name], column, equal_nan=True), name
        else:
            assert np.array_equal(back[name], column), name


def test_parquet_needs_pyarrow(tmp_path):
    table, _ = raising_table()
    try:
        import pyarrow.parquet
    except ImportError:
        with pytest.raises(ImportError, match="pyarrow"):
            write_parquet(table, tmp_path / "campaign.parquet")
        return
    back = pyarrow.parquet.read_table(write_parquet(table, tmp_path / "c.parquet")).to_pydict()
    assert list(back) == list(table) and back["error"][3] == "ValueError: case 3 diverged"


# --- summary ---------------------------------------------------------------------------------

def test_clopper_pearson_known_values():
    # k = 0 and k = n have closed forms; 5/10 as given by R's binom.test.
    assert clopper_pearson(0, 10) == (0.0, pytest.approx(1 - 0.025 ** 0.1, abs=1e-12))
    assert clopper_pearson(10, 10) == (pytest.approx(0.025 ** 0.1, abs=1e-12), 1.0)
    assert clopper_pearson(5, 10) == pytest.approx((0.1870860, 0.8129140), abs=1e-7)
    assert clopper_pearson(3, 20) == pytest.approx(
        (stats.beta.ppf(0.025, 3, 18), stats.beta.ppf(0.975, 4, 17)), abs=1e-15)
    with pytest.raises(ValueError):
        clopper_pearson(0, 0)


def test_summarise_on_known_data():
    data = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, np.nan])
    table = {"case": np.arange(11), "peak": data,
             "captured": np.array([1, 1, 1, 0, 1, 1, 1, 1, 1, 1, np.nan], dtype=float),
             "status": np.array(["ok"] * 10 + ["error"]),
             "error": np.array([""] * 10 + ["ValueError: x"])}
    s = summarise(table, "captured", ["peak"])
    assert (s["cases"], s["errors"], s["error_cases"]) == (11, 1, [10])
    assert s["success"]["successes"] == 9 and s["success"]["evaluated"] == 10
    assert s["success"]["ci95"] == clopper_pearson(9, 10)
    peak = s["quantities"]["peak"]
    assert peak["p50"] == np.percentile(data[:10], 50) == 3.5
    assert peak["p99"] == np.percentile(data[:10], 99, method="linear")
    assert (peak["max"], peak["max_case"], peak["n"]) == (9.0, 5, 10)
    text = format_summary(s)
    assert "captured   9/10 = 0.9000" in text and "(cases 10)" in text and "peak" in text
    assert list(summarise(table, "captured")["quantities"]) == ["peak"]


def test_summarise_extremes_and_bad_success_column():
    table = {"case": np.arange(4), "captured": np.zeros(4)}
    assert summarise(table)["success"]["ci95"] == clopper_pearson(0, 4)
    table["captured"] = np.ones(4)
    assert summarise(table)["success"]["ci95"][1] == 1.0
    table["captured"] = np.array([0.0, 2.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="'captured' must hold 0/1"):
        summarise(table)
    with pytest.raises(ValueError, match="no column 'peak'"):
        summarise(table, None, ["peak"])


def test_worst_cases():
    table = {"case": np.arange(6), "force": np.array([1.0, 7.0, np.nan, 7.0, 3.0, 9.0])}
    assert worst_cases(table, "force", 3).tolist() == [5, 1, 3]
    assert worst_cases(table, "force", 2, largest=False).tolist() == [0, 4]


# --- plots -----------------------------------------------------------------------------------

def test_plots_are_written_as_png(tmp_path):
    table, _ = raising_table()
    written = [plot_capture_map(table, "lateral", "closing_velocity", "captured",
                                tmp_path / "map.png"),
               plot_histograms(table, ["stroke", "force", "lateral", "closing_velocity"],
                               tmp_path / "sub" / "hist.png")]
    assert written == [tmp_path / "map.png", tmp_path / "sub" / "hist.png"]
    for path in written:
        assert path.read_bytes()[:8] == PNG_MAGIC
