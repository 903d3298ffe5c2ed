"""Fuzzing the serial readers: mutated TOML specs and URDF files either load or raise ModelError.

Starting from the bundled ``ur5_arm.toml`` and ``urdf/ur5_robot.urdf``, a fixed seed makes a few
hundred mutants (fields deleted, duplicated or given junk: huge, NaN, infinite and negative
numbers, strings, unicode and NUL bytes, wrong types; long rotation sequences; parent cycles and
mimic tags; truncated files and bytes that are not UTF-8). Each mutant goes through the reader
(``spec.load`` or ``urdf.load_urdf``, the model only, no kernels) within a time budget: a hang,
or any exception other than :class:`ModelError`, fails the test with the mutant that caused it.

``python tests/test_fuzz_serial_specs.py N`` runs N cases of each kind and prints a summary.
"""

from __future__ import annotations

import copy
import json
import math
import random
import signal
import sys
import time
import tomllib
import traceback
import warnings
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from mechgen.generator.model import ModelError
from mechgen.generator.frontend import load
from mechgen.generator.families.serial.urdf import load_urdf

SEED = 20250611
CASES = 300                 # per kind (TOML specs, URDF files)
BUDGET = 5.0                # seconds per case
MECHANISMS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"
BASE_TOML = MECHANISMS / "ur5_arm.toml"
BASE_URDF = MECHANISMS / "urdf" / "ur5_robot.urdf"

JUNK_VALUES: list[Any] = [
    10 ** 400, -10 ** 400, 2 ** 63, 1e300, -1e300, 1e151, 1e-320, float("nan"), float("inf"),
    float("-inf"), -1, -1.5, 0, 0.0, 1, "", "junk", "Gelenk_ä", "名前", "a\x00b", "nan", "inf",
    "1+2j", "1.5", "q", "p", "sin", True, False, [], {}, [1, 2], [1, 2, 3, 4], [[1, 2, 3]] * 3,
    ["x", 90], [["q", 1]], {"x": 1}, "a" * 70, "x", "ground", "shoulder", "wrist3",
    [0, 0, 10 ** 400], [0, float("nan"), 0], [1e151, 0, 0], [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
]
JUNK_TEXT = ["", " ", "1" + "0" * 400, "1e400", "-1e400", "1e200", "1e151", "nan", "inf", "-inf",
             "-1", "-0.5", "abc", "1 2", "1 2 3 4", "1+2j", "0x10", "1_0", "\u00e4\u00f6", "名",
             "1e-320", "0 0 0", "1 nan 0", "0 0 1e300", "3.14159 1e300 0", "  1   0  0 ",
             "1e150 1e150 1e150", "0.0000001 1e-9 0"]


# --- time budget ------------------------------------------------------------------------

class CaseTimeout(BaseException):
    """A case ran longer than its budget (a BaseException so that no reader can catch it)."""


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in the main thread when the block runs longer than ``seconds``."""
    def alarm(signum, frame):
        raise CaseTimeout(f"longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# --- a small TOML writer (the standard library reads TOML but does not write it) ----------

def toml_value(v: Any) -> str:
    """One TOML value, inline."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if v != v else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {v!r}")


def toml_key(k: str) -> str:
    bare = k and all(c.isascii() and (c.isalnum() or c in "_-") for c in k)
    return k if bare else json.dumps(k, ensure_ascii=False)


def toml_dumps(data: dict) -> str:
    """Scalars and arrays first, then [tables] and [[arrays of tables]] (one level deep)."""
    out, later = [], []
    for k, v in data.items():
        if isinstance(v, dict):
            later.append(f"[{toml_key(k)}]\n" + "".join(
                f"{toml_key(kk)} = {toml_value(vv)}\n" for kk, vv in v.items()))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for t in v:
                later.append(f"[[{toml_key(k)}]]\n" + "".join(
                    f"{toml_key(kk)} = {toml_value(vv)}\n" for kk, vv in t.items()))
        else:
            out.append(f"{toml_key(k)} = {toml_value(v)}\n")
    return "".join(out) + "\n".join(later)


# --- mutations of a parsed TOML spec ------------------------------------------------------

def containers(node: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """Every dict and list in the tree with its path."""
    if isinstance(node, (dict, list)):
        yield path, node
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            yield from containers(v, path + (k,))


def junk(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(JUNK_VALUES))


def rotation_sequence(rng: random.Random) -> list:
    """A gamma of 1..20 elementary rotations: odd degrees, quarter turns, some parameters."""
    seq = []
    for _ in range(rng.randint(1, 20)):
        angle = rng.choice([rng.uniform(-360, 360), 90, -90, 180, 0, rng.randint(-1000, 1000),
                            "theta", f"a{rng.randint(0, 20)}"])
        seq.append([rng.choice("xyz"), angle])
    return seq


def mutate_dict(data: dict, rng: random.Random) -> str:
    """One structural mutation in place; returns what it did."""
    path, node = rng.choice(list(containers(data)))
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    op = rng.choice(["delete", "junk", "junk", "wrap", "duplicate", "rename", "gamma", "parent",
                     "scale"])
    joints = data.get("joints")
    tables = [x for x in joints if isinstance(x, dict)] if isinstance(joints, list) else []
    if op == "gamma" and tables:
        joint = rng.choice(tables)
        joint["gamma"] = rotation_sequence(rng)
        return f"gamma of a joint = {joint['gamma']!r}"
    if op == "parent" and tables:     # also later bodies and its own: cycles
        joint = rng.choice(tables)
        names = [x["body"]["name"] for x in tables
                 if isinstance(x.get("body"), dict) and isinstance(x["body"].get("name"), str)]
        joint["parent"] = rng.choice(names + ["ground", "nobody", joint.get("name", "x")])
        return f"parent = {joint['parent']!r}"
    if not keys:
        if isinstance(node, list):
            node.append(junk(rng))
        else:
            node[rng.choice(["name", "mass", "junk"])] = junk(rng)
        return f"filled the empty {path}"
    k = rng.choice(keys)
    if op == "delete":
        del node[k]
        return f"deleted {path + (k,)}"
    if op == "wrap":
        node[k] = rng.choice([[node[k]], {"x": node[k]}, str(node[k])])
        return f"wrapped {path + (k,)}"
    if op == "duplicate":
        if isinstance(node, list):
            node.insert(k, copy.deepcopy(node[k]))
        else:
            node[k + "_2" if rng.random() < 0.5 else rng.choice(keys)] = copy.deepcopy(node[k])
        return f"duplicated {path + (k,)}"
    if op == "rename" and isinstance(node, dict):
        node[rng.choice(["name", "mass", "type", "Name", "ｎａｍｅ", "l", "com"])] = node.pop(k)
        return f"renamed {path + (k,)}"
    if op == "scale" and isinstance(node[k], (int, float)) and not isinstance(node[k], bool):
        node[k] = node[k] * rng.choice([1e200, -1e100, 1e-300, 10 ** 160, -1])
        return f"scaled {path + (k,)}"
    node[k] = junk(rng)
    return f"junk at {path + (k,)}: {node[k]!r}"


def mutate_bytes(raw: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Truncation, NUL and non-UTF-8 bytes, duplicated or deleted lines."""
    op = rng.choice(["truncate", "nul", "latin1", "bom", "dupline", "delline"])
    pos = rng.randrange(len(raw) + 1)
    if op == "truncate":
        return raw[:pos], f"truncated at {pos}"
    if op == "nul":
        return raw[:pos] + b"\x00" + raw[pos:], f"NUL at {pos}"
    if op == "latin1":
        return raw[:pos] + b"\xff\xfe\xe9" + raw[pos:], f"bytes ff fe e9 at {pos}"
    if op == "bom":
        return b"\xef\xbb\xbf" + raw, "UTF-8 byte order mark"
    lines = raw.split(b"\n")
    i = rng.randrange(len(lines))
    if op == "dupline":
        lines.insert(i, lines[i])
    else:
        del lines[i]
    return b"\n".join(lines), f"{op} {i}"


def toml_case(rng: random.Random, tmp: Path) -> tuple[Callable[[], Any], str]:
    data = tomllib.loads(BASE_TOML.read_text())
    done = [mutate_dict(data, rng) for _ in range(rng.randint(1, 3))]
    raw = toml_dumps(data).encode("utf-8", "surrogatepass")
    if rng.random() < 0.2:
        raw, what = mutate_bytes(raw, rng)
        done.append(what)
    path = tmp / "fuzz.toml"
    path.write_bytes(raw)
    return (lambda: load(path)), "; ".join(done)


# --- mutations of a URDF file ---------------------------------------------------------------

def mutate_xml(root: ET.Element, rng: random.Random) -> str:
    """One mutation of the element tree in place; returns what it did."""
    links = [e.get("name") for e in root.iter("link") if e.get("name") is not None]
    joints = root.findall("joint")
    elements = [e for e in root.iter() if e is not root]
    op = rng.choice(["attr", "attr", "attr", "delattr", "delete", "duplicate", "cycle", "mimic",
                     "type", "rename", "deep"])
    if op == "cycle" and joints:
        jt = rng.choice(joints)
        end = jt.find(rng.choice(["parent", "child"]))
        if end is not None:
            end.set("link", rng.choice(links + ["nowhere"]))
            return f"joint {jt.get('name')}: {end.tag} -> {end.get('link')}"
    if op == "mimic" and joints:
        jt = rng.choice(joints)
        ET.SubElement(jt, "mimic", joint=rng.choice([j.get("name") or "" for j in joints]))
        return f"mimic on {jt.get('name')}"
    if op == "type" and joints:
        jt = rng.choice(joints)
        jt.set("type", rng.choice(["fixed", "revolute", "continuous", "prismatic", "floating",
                                   "planar", "spherical", ""]))
        return f"type of {jt.get('name')} = {jt.get('type')}"
    if op == "deep":
        parent, last = (links or ["base_link"])[-1], None
        for i in range(rng.choice([50, 1200])):
            name = f"deep{i}"
            ET.SubElement(root, "link", name=name)
            j = ET.SubElement(root, "joint", name=f"deep_j{i}", type="fixed")
            ET.SubElement(j, "parent", link=parent)
            ET.SubElement(j, "child", link=name)
            parent = last = name
        return f"a chain of fixed links ending in {last}"
    el = rng.choice(elements)
    if op == "delete":
        for parent in root.iter():
            if el in list(parent):
                parent.remove(el)
                break
        return f"deleted <{el.tag} {el.attrib}>"
    if op == "duplicate":
        for parent in root.iter():
            if el in list(parent):
                parent.append(copy.deepcopy(el))
                break
        return f"duplicated <{el.tag} {el.attrib}>"
    if op == "delattr" and el.attrib:
        a = rng.choice(list(el.attrib))
        del el.attrib[a]
        return f"deleted {el.tag}@{a}"
    if op == "rename" and el.get("name") is not None:
        el.set("name", rng.choice(["", "x y", "名", "for", "q", "a" * 80, "base_link", "1st"]))
        return f"renamed a {el.tag} to {el.get('name')!r}"
    if not el.attrib:
        el.set(rng.choice(["xyz", "rpy", "value", "name"]), rng.choice(JUNK_TEXT))
        return f"added an attribute to <{el.tag}>"
    a = rng.choice(list(el.attrib))
    el.set(a, rng.choice(JUNK_TEXT))
    return f"{el.tag}@{a} = {el.get(a)!r}"


def load_options(rng: random.Random, joints: list[str], links: list[str]) -> dict:
    """Random options of load_urdf: base, lock, frames, snap, mimic, inertia."""
    opts: dict[str, Any] = {}
    if rng.random() < 0.3:
        opts["base"] = rng.choice(["fixed", "free", "flying"])
    if rng.random() < 0.3 and joints:
        opts["lock"] = {rng.choice(joints + ["nojoint"]): rng.choice(
            [0.0, 1.0, -2.5, float("nan"), 1e300, 10 ** 400, "x", True])}
    if rng.random() < 0.2:
        opts["frames"] = [rng.choice(links + ["nolink"])]
    if rng.random() < 0.2:
        opts["snap"] = rng.choice([0.0, 1e-12, 1e-6])
    if rng.random() < 0.3:
        opts["mimic_independent"] = rng.random() < 0.5
    if rng.random() < 0.3:
        opts["inertia"] = rng.choice(["strict", "repair"])
    return opts


def urdf_case(rng: random.Random, tmp: Path) -> tuple[Callable[[], Any], str]:
    root = ET.fromstring(BASE_URDF.read_bytes())
    done = [mutate_xml(root, rng) for _ in range(rng.randint(1, 3))]
    raw = ET.tostring(root, encoding="utf-8")
    if rng.random() < 0.2:
        raw, what = mutate_bytes(raw, rng)
        done.append(what)
    path = tmp / "fuzz.urdf"
    path.write_bytes(raw)
    joints = [j.get("name") for j in root.iter("joint") if j.get("name")]
    links = [e.get("name") for e in root.iter("link") if e.get("name")]
    opts = load_options(rng, joints, links)
    if rng.random() < 0.25:   # through a spec pointing at the file
        mech = {"name": rng.choice(["ur5", "for", "名"]), "urdf": "fuzz.urdf"}
        for key, field in (("base", "base"), ("frames", "frames"), ("snap", "snap")):
            if key in opts:
                mech[field] = opts[key]
        if "mimic_independent" in opts:
            mech["mimic"] = "independent" if opts["mimic_independent"] else "lock"
        if "inertia" in opts:
            mech["inertia"] = opts["inertia"]
        if rng.random() < 0.3:
            mech[rng.choice(["gravity", "snap", "frames", "mimic", "inertia", "urdf"])] = junk(rng)
        spec = {"mechanism": mech}
        if "lock" in opts and all(isinstance(v, (int, float)) for v in opts["lock"].values()):
            spec["lock"] = opts["lock"]
        (tmp / "fuzz_spec.toml").write_text(toml_dumps(spec), encoding="utf-8",
                                            errors="surrogatepass")
        return (lambda: load(tmp / "fuzz_spec.toml")), "; ".join(done) + f"; spec {spec!r}"
    return (lambda: load_urdf(path, **opts)), "; ".join(done) + f"; options {opts!r}"


# --- running the cases ------------------------------------------------------------------

def _within_budget(case: Callable[[], Any]) -> None:
    """``case()`` within BUDGET seconds of wall time; a case over it is run once more, so that
    a pause of the shared machine (a case of 0.2 s once took over 5 s in a loaded CI worker)
    is not taken for a hang: a real hang exceeds the budget twice."""
    for attempt in (1, 2):
        try:
            with warnings.catch_warnings(), budget(BUDGET):
                warnings.simplefilter("ignore")
                case()
            return
        except CaseTimeout:
            if attempt == 2:
                raise


def run(make: Callable, n: int, tmp: Path, seed: int) -> dict:
    """n cases of one kind: counts of outcomes, failures (description, traceback), times."""
    rng = random.Random(seed)
    out = {"loaded": 0, "refused": 0, "failures": [], "slowest": (0.0, ""), "total": 0.0}
    for i in range(n):
        case, what = make(rng, tmp)
        t0 = time.perf_counter()
        try:
            _within_budget(case)
            out["loaded"] += 1
        except ModelError as e:
            out["refused"] += 1
            if not str(e).strip():
                out["failures"].append((i, what, "ModelError with an empty message"))
        except BaseException as e:  # noqa: BLE001 - every other outcome is the failure
            if isinstance(e, KeyboardInterrupt):
                raise
            out["failures"].append((i, what, "".join(traceback.format_exception_only(e))[-600:]))
        dt = time.perf_counter() - t0
        out["total"] += dt
        if dt > out["slowest"][0]:
            out["slowest"] = (dt, what)
    return out


def check(result: dict, kind: str) -> None:
    failures = result["failures"]
    assert not failures, f"{len(failures)} {kind} mutants crashed or hung; first ones:\n" + \
        "\n".join(f"case {i}: {what}\n  -> {err}" for i, what, err in failures[:5])
    # the mutants must exercise both outcomes, or the fuzzing proves nothing
    assert result["loaded"] >= CASES // 20 and result["refused"] >= CASES // 4, result


def test_mutated_toml_specs_load_or_raise_model_error(tmp_path):
    check(run(toml_case, CASES, tmp_path, SEED), "TOML")


def test_mutated_urdf_files_load_or_raise_model_error(tmp_path):
    check(run(urdf_case, CASES, tmp_path, SEED + 1), "URDF")


def test_the_time_budget_interrupts_a_hanging_case():
    with pytest.raises(CaseTimeout):
        with budget(0.05):
            while True:
                pass


if __name__ == "__main__":
    import tempfile
    n = int(sys.argv[1]) if len(sys.argv) > 1 else CASES
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else SEED
    with tempfile.TemporaryDirectory() as d:
        for kind, make, s in (("TOML", toml_case, seed), ("URDF", urdf_case, seed + 1)):
            r = run(make, n, Path(d), s)
            print(f"{kind}: {n} cases, loaded {r['loaded']}, refused {r['refused']}, "
                  f"failures {len(r['failures'])}, total {r['total']:.1f} s, "
                  f"slowest {r['slowest'][0]:.2f} s ({r['slowest'][1][:200]})")
            kinds: dict[str, list] = {}
            for i, what, err in r["failures"]:
                kinds.setdefault(err.strip().splitlines()[-1][:120], []).append((i, what))
            for err, cases in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
                print(f"  {len(cases):4d} x {err}\n         e.g. case {cases[0][0]}: "
                      f"{cases[0][1][:300]}")
