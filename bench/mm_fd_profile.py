"""Where the mass matrix and forward dynamics spend their operations and their time.

Two measurements per robot (the race's robots: ur5, panda, solo12 and the general-geometry
ones of bench/general_robots.py):

1. Operations per stage. Each statement of a kernel, after dead-code removal and before CSE
   (CSE names its temporaries ``cse<k>``, which belong to no stage), is attributed to a stage
   by the prefix of the name the algorithm gave it (``IJ7_00`` -> ``IJ``: the joint rotation
   of a composite inertia, crba.py). The stages:

       trig + link transforms   c, s (sin and cos: one op each), beta, r_rel, the quaternion
       composite inertias       Mc, cc, Ic, cp, IJ                  (crba.py)
       mass-matrix columns      Fm, Nm: each column carried to the base
       Newton-Euler bias        omega, omega_p, epsd, a, oo, F, N, F_c, N_c, b (rnea.py)
       L^T D L                  D, invD, L, H, y                    (ldlt.py)
       ABA inertias             Ia, IaP, IAJ, IAH, IAM, Da, invDa, uD, ua, Wf, Wn (aba.py)
       ABA bias forces          pAf, pAn, paf, pan, paP, da, daa, dae
       qdd                      the last pass of either form
       checks                   the pivots' and the Euler base's status checks

2. Time of hand-made variants of the generated C (the single-state kernel in a compiled loop
   writing one reused buffer, as the race's ``ours_loop``; ``-std=c99 -O3 -DNDEBUG``, the race's
   flags; best of ``reps`` interleaved passes over 2000 random states):

       generated       the kernel as generated
       trig stand-in   every mg_sincos_poly replaced by a rational rotation (t = x/2,
                       s = 2t/(1+t^2), c = (1-t^2)/(1+t^2): still a rotation, so the matrix stays
                       positive definite; one division per lane instead of the polynomial)
       no zero stores  (mass matrix) the stores of structural zeros dropped (the buffer is zeroed)
       upper only      (mass matrix) the stores below the diagonal dropped, as Pinocchio's crba
                       fills the upper triangle only
       compute only    (mass matrix) all three: what is left is the arithmetic and the stores of
                       the non-zero upper triangle
   The variants answer "is it the operations, the stores or the trigonometry" (docs/algorithms.md
   §2.4.1); they are never shipped. Spill traffic: the number of stack references (``(%rsp)``)
   in the compiled function, beside its number of arithmetic instructions.

    python bench/mm_fd_profile.py [robot ...]       # table; JSON in bench/results/
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from math import prod
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MECHANISMS = ROOT / "generator" / "mechanisms"
BUNDLED = {"ur5": "ur5_urdf.toml", "panda": "panda_arm.toml", "solo12": "solo12.toml"}
ROBOTS = ("ur5", "panda", "xarm7", "solo12", "solo12_body", "hyq", "hyq_body")
FLAGS = ["-std=c99", "-O3", "-DNDEBUG"]

STAGES = {
    "trig + link transforms": ("c", "s", "beta", "r_rel", "quat_k", "tau_base_", "c_base_rz"),
    "composite inertias": ("Mc", "cc", "Ic", "cp", "IJ"),
    "mass-matrix columns": ("Fm", "Nm"),
    "Newton-Euler bias": ("omega", "omega_p", "epsd", "a", "oo", "F", "N", "F_c", "N_c", "b"),
    "L^T D L": ("D", "invD", "L", "LD", "H", "y"),
    "ABA inertias": ("Ia", "IaP", "IAJ", "IAH", "IAM", "Da", "invDa", "uD", "ua", "Wf", "Wn"),
    "ABA bias forces": ("pAf", "pAn", "paf", "pan", "paP", "da", "daa", "dae"),
    "qdd": ("qdd",),
}
STAGE_OF = {prefix: stage for stage, prefixes in STAGES.items() for prefix in prefixes}


def name_prefix(name: str) -> str:
    """The algorithm's name of a statement without its joint numbers: ``IJ7_00`` -> ``IJ``,
    ``omega_p7_y`` -> ``omega_p``, ``quat_k`` -> ``quat_k``."""
    m = re.match(r"[A-Za-z_]+?(?=\d)", name)
    return m.group(0) if m else name


def stage_ops(kernel) -> Counter:
    """Operations of ``kernel`` per stage (see the module doc), counted after dead-code removal
    and before CSE; an assignment of no known stage counts as "other"."""
    from mechgen.generator.ir import Assign, Check
    from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code
    from mechgen.generator.passes.opcount import count_expr_ops
    out: Counter = Counter()
    for st in remove_dead_code(drop_unguarded_checks(kernel)).body:
        c = count_expr_ops([st.expr])
        if isinstance(st, Check):
            out["checks"] += sum(c.values())
        elif isinstance(st, Assign):
            out[STAGE_OF.get(name_prefix(str(st.target)), "other")] += sum(c.values())
    return out


def spec_path(name: str, tmp: Path) -> Path:
    """The bundled spec of ``name``, or bench/general_robots.py's spec written into ``tmp``."""
    if name in BUNDLED:
        return MECHANISMS / BUNDLED[name]
    from bench.general_robots import spec_text
    path = tmp / f"{name}.toml"
    path.write_text(spec_text(name))
    return path


def generate_dynamics(name: str, out: Path) -> dict:
    """Generate ``name``'s mass matrix and forward dynamics into ``out/<model>/`` (C and
    manifest); return {"model", "ops": {kernel: total}, "stages": {kernel: {stage: ops}},
    "forms": {form: ops} of forward dynamics, "n"}."""
    from mechgen.generator.build import manifest_fields, write_files
    from mechgen.generator.emit import render, sha256_text
    from mechgen.generator.families import family_of
    from mechgen.generator.families.serial import kernels as K
    from mechgen.generator.frontend import load
    from mechgen.generator.pipeline import optimise
    spec = spec_path(name, out)
    model = load(spec)
    chain = family_of(model).coded(model)
    gen = [optimise(b, chain) for b in (K.mass_matrix, K.forward_dynamics)]
    write_files(out / model.name, render(model.name, spec.name, sha256_text(spec.read_text()),
                                         gen, manifest_fields(model)))
    forms = {"ltdl": K.forward_dynamics_ltdl, "aba": K.forward_dynamics_aba}
    return {"model": model.name, "n": chain.n, "nq": chain.nq,
            "ops": {g.kernel.name: g.ops["total"] for g in gen},
            "forms": {f: optimise(b, chain).ops["total"] for f, b in forms.items()},
            "stages": {"mass_matrix": dict(stage_ops(K.mass_matrix(chain))),
                       **{f"forward_dynamics_{f}": dict(stage_ops(b(chain)))
                          for f, b in forms.items()}}}


# ---------------------------------------------------------------- C variants
SINCOS = "mg_sincos_poly(sc_x[sc_i], &sc_s[sc_i], &sc_c[sc_i]);"
STAND_IN = ("{ const double mb_t = 0.5 * sc_x[sc_i], mb_k = 1.0 / (1.0 + mb_t * mb_t); "
            "sc_s[sc_i] = 2.0 * mb_t * mb_k; sc_c[sc_i] = (1.0 - mb_t * mb_t) * mb_k; }")


def function_span(c_text: str, c_function: str) -> tuple[int, int]:
    """(start, end) of the single-state function ``c_function`` in ``c_text``."""
    start = c_text.index(f"int {c_function}(")
    return start, c_text.index("\n}\n", start) + 2


def variant(c_text: str, c_function: str, n: int | None, trig: bool = False,
            zeros: bool = False, upper: bool = False) -> str:
    """``c_text`` with the function ``c_function`` changed: ``trig`` (sin and cos by the stand-in),
    ``zeros`` (no stores of 0.0 into the output A), ``upper`` (no stores of A below the
    diagonal of the n x n matrix)."""
    start, end = function_span(c_text, c_function)
    body = c_text[start:end]
    if trig:
        body = body.replace(SINCOS, STAND_IN)

    def keep(m: re.Match) -> str:
        row, col = divmod(int(m.group(1)), n)
        if (zeros and m.group(2) == "0.0") or (upper and row > col):
            return ""
        return m.group(0)

    if zeros or upper:
        body = re.sub(r"\n    A\[(\d+)\] = ([^;]*);", keep, body)
    return c_text[:start] + body + c_text[end:]


HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "%(header)s"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec * 1e9 + t.tv_nsec; }
int main(int argc, char **argv)
{
    const int N = 2000, reps = atoi(argv[1]), nin = %(nin)d, nout = %(nout)d;
    const int w[3] = {%(widths)s};
    double *in[3], *out = calloc(nout, sizeof(double)), best = 1e300, check = 0.0;
    srand(1);
    for (int k = 0; k < nin; ++k) {
        in[k] = malloc(sizeof(double) * w[k] * N);
        for (int i = 0; i < w[k] * N; ++i) in[k][i] = 2.0 * rand() / RAND_MAX - 1.0;
    }
    for (int r = 0; r < reps; ++r) {
        const double t0 = now();
        for (int i = 0; i < N; ++i) {
            %(call)s;
            check += out[i %% nout];
        }
        const double t = (now() - t0) / N;
        if (t < best) best = t;
    }
    if (argc > 2) {                 /* the outputs of state 0, for the tests */
        %(call0)s;
        for (int k = 0; k < nout; ++k) printf("%%.17g\n", out[k]);
        return 0;
    }
    printf("%%.2f %%g\n", best, check);
    return 0;
}
"""


def harness_source(header: Path, c_function: str, inputs: list[tuple[str, int]],
                   n_out: int) -> str:
    """A C loop over 2000 random states (inputs uniform in [-1, 1]) calling ``c_function``."""
    args = ", ".join(f"in[{k}] + i * {w}" for k, (_, w) in enumerate(inputs))
    args0 = ", ".join(f"in[{k}]" for k in range(len(inputs)))
    return HARNESS % {"header": header, "nin": len(inputs), "nout": n_out,
                      "widths": ", ".join(str(w) for _, w in inputs) or "0",
                      "call": f"{c_function}({args}, out)",
                      "call0": f"{c_function}({args0}, out)"}


def build(folder: Path, model: str, kernel: dict, c_text: str, tag: str) -> Path:
    """Compile ``c_text`` (a variant of ``folder/<model>.c``) with the harness for ``kernel``
    (its manifest entry); return the executable."""
    src = folder / f"{model}_{tag}.c"
    src.write_text(c_text)
    inputs = [(i["name"], prod(i["shape"])) for i in kernel["inputs"]]
    n_out = sum(prod(o["shape"]) for o in kernel["outputs"])
    harness = folder / f"harness_{kernel['name']}.c"
    harness.write_text(harness_source(folder / f"{model}.h", kernel["c_function"], inputs, n_out))
    exe = folder / f"{kernel['name']}_{tag}"
    subprocess.run(["gcc", *FLAGS, f"-I{folder}", str(harness), str(src), "-lm", "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    return exe


def spill_counts(folder: Path, c_text: str, c_function: str) -> dict:
    """Stack references and arithmetic instructions in the compiled ``c_function``."""
    src = folder / "spills.c"
    src.write_text(c_text)
    asm = subprocess.run(["gcc", *FLAGS, f"-I{folder}", "-S", "-o", "-", str(src)], check=True,
                         capture_output=True, text=True).stdout
    body = asm[asm.index(f"\n{c_function}:"):]
    body = body[:body.index(".size")]
    return {"stack_refs": body.count("(%rsp)"),
            "arith": len(re.findall(r"\n\s+(?:add|sub|mul|div)[sp]d", body))}


def time_variants(folder: Path, model: str, reps: int = 7, rounds: int = 5) -> dict:
    """{kernel: {variant: ns per call}}, best of ``rounds`` interleaved runs of each binary."""
    manifest = json.loads((folder / "manifest.json").read_text())
    c_text = (folder / f"{model}.c").read_text()
    out = {}
    for kernel in manifest["kernels"]:
        fn = kernel["c_function"]
        n = manifest["n"]
        kinds = {"generated": {}, "trig stand-in": {"trig": True}}
        if kernel["name"] == "mass_matrix":
            kinds.update({"no zero stores": {"zeros": True}, "upper only": {"upper": True},
                          "compute only": {"trig": True, "zeros": True, "upper": True}})
        exes = {tag: build(folder, model, kernel, variant(c_text, fn, n, **kw),
                           tag.replace(" ", "_"))
                for tag, kw in kinds.items()}
        best = {tag: float("inf") for tag in exes}
        for _ in range(rounds):
            for tag, exe in exes.items():
                r = subprocess.run([str(exe), str(reps)], check=True, capture_output=True,
                                   text=True)
                best[tag] = min(best[tag], float(r.stdout.split()[0]))
        out[kernel["name"]] = {**best, **spill_counts(folder, c_text, fn)}
    return out


def profile(names=ROBOTS, reps: int = 7, rounds: int = 5) -> dict:
    results = {}
    with tempfile.TemporaryDirectory(prefix="mechgen_profile_") as tmp:
        for name in names:
            info = generate_dynamics(name, Path(tmp))
            info["ns"] = time_variants(Path(tmp) / info["model"], info["model"], reps, rounds)
            results[name] = info
            report(name, info)
    return results


def report(name: str, info: dict) -> None:
    ops = info["ops"]
    print(f"\n{name} (n = {info['n']}): mass matrix {ops['mass_matrix']} ops, forward dynamics "
          f"{ops['forward_dynamics']} ops (L^T D L {info['forms']['ltdl']}, "
          f"ABA {info['forms']['aba']})")
    for kernel, stages in info["stages"].items():
        total = sum(stages.values())
        parts = ", ".join(f"{s} {v}" for s, v in sorted(stages.items(), key=lambda kv: -kv[1]))
        print(f"  {kernel:28s} before CSE {total:5d}: {parts}")
    for kernel, t in info["ns"].items():
        times = ", ".join(f"{k} {v:.0f}" for k, v in t.items() if isinstance(v, float))
        print(f"  {kernel:28s} ns: {times}; {t['stack_refs']} stack refs, "
              f"{t['arith']} arithmetic instructions", flush=True)


if __name__ == "__main__":
    chosen = tuple(a for a in sys.argv[1:] if not a.startswith("-")) or ROBOTS
    res = profile(chosen)
    out = ROOT / "bench" / "results" / "mm_fd_profile.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"\nwritten {out.relative_to(ROOT)}")
