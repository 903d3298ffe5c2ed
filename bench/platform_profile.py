"""Where a parallel mechanism's step spends its operations, stage by stage (paper 000 section 7).

The stages of :class:`PlatformBuild` are built one after another on one recorder, in the order
a step needs them; each stage owns the statements recorded while it was built. The statements
the kernel's outputs do not reach are removed (dead code, as the pipeline does), then the
operations left in each stage are counted exactly (generator/passes/opcount.py), split into
adds+muls, divisions, square roots and trig calls (sin, cos, atan2). The counts are those
before CSE (CSE then shares some of them across stages; the last line gives the kernel's count
after the whole pipeline, as the manifest records it).

    python bench/platform_profile.py hexapod_pus [NAME ...]      # step, base_step, step_accel
    python bench/platform_profile.py --build classic hexapod_pus  # the section 1.6 reduction
    python bench/platform_profile.py --build frame_0 hexapod_pus  # section 1.6.2

Each kernel is profiled with the build the generator chooses for it (``--build chosen``, the
candidate of generator.pipeline.choice with the fewest operations: the reduction of section 1.6,
``classic``, the one in C's frame, ``frame_c``, generator/families/parallel/frame_c.py, or the
one in frame 0, ``frame_0``, frame_0.py, section 1.6.2), or with the one named.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mechgen.generator.families.parallel import kernels as pk  # noqa: E402
from mechgen.generator.families.parallel.frame_0 import Frame0Build  # noqa: E402
from mechgen.generator.families.parallel.frame_c import FrameCBuild  # noqa: E402
from mechgen.generator.frontend import load as load_spec  # noqa: E402
from mechgen.generator.ir import Assign, Kernel  # noqa: E402
from mechgen.generator.passes.dead_code import drop_unguarded_checks, remove_dead_code  # noqa: E402
from mechgen.generator.passes.opcount import count_expr_ops  # noqa: E402
from mechgen.generator.pipeline import optimise  # noqa: E402

SPECS = Path(__file__).resolve().parent.parent / "generator" / "mechanisms"

# (stage, the PlatformBuild properties it builds), in the order a step builds them
STAGES = [
    ("pose of C (cos, sin, alpha_C)", ["psi_cs", "alpha_C", "omega_0"]),
    ("leg closed form (IK, atan2)", ["legs_q"]),
    ("leg link transforms", ["links"]),
    ("closure matrices C(d), C(i)", ["closures"]),
    ("H_k = C(d)^-1 C(i) | W, z", ["H", "cut_maps"]),
    ("qd = H u | W p + z e.w", ["v_Cc", "qd"]),
    ("velocity products, h_k", ["oo_C", "motion_v", "h"]),
    ("joint laws Q_active", ["Q_active"]),
    ("leg mass matrices A_k (CRBA)", ["A_legs"]),
    ("leg bias b_k (RNEA)", ["base_turn", "b_legs"]),
    ("reduction A*_C, b*_C", ["M_C", "s_C", "reduced", "reduced_c"]),
    ("L D L^T solve udot", ["y_c", "udot"]),
    ("qdd = H udot + h", ["qdd"]),
    ("leg loads on C", ["tips", "on_C"]),
    ("base loads", ["base_loads"]),
    ("psi_dot, damper power", ["psi_dot", "damping_power"]),
]
KERNELS = {"step": (pk.step, pk._full_inputs), "step_accel": (pk.step_accel, pk._full_inputs),
           "base_step": (pk.base_step, pk._moving_inputs)}
BUILDS = {"classic": pk.PlatformBuild, "frame_c": FrameCBuild, "frame_0": Frame0Build}
# the stages' properties that only one build has, or that the other build leaves unused
ONLY = {"classic": {"cut_maps", "v_Cc", "reduced_c", "y_c", "omega_0"},
        "frame_c": {"H", "reduced", "omega_0"}, "frame_0": {"H", "reduced", "v_Cc"}}


def chosen_build(pf, kernel: str) -> str:
    """The build whose candidate the generator keeps for ``kernel`` (fewest operations)."""
    candidates = KERNELS[kernel][0].candidates
    ops = [optimise(c, pf).ops["total"] for c in candidates]
    return _build_of(candidates[ops.index(min(ops))])


def _build_of(candidate) -> str:
    """The BUILDS key of a candidate (``step_frame_c`` -> ``frame_c``)."""
    return next(b for b in BUILDS if candidate.__name__.endswith("_" + b))


def _outputs(kernel: str, pf, b, ins) -> list:
    """The output ports of ``kernel`` built on ``b`` (as kernels.py builds them)."""
    if kernel == "step_accel":
        return [pk._xdot_port(b, ins), pk.Port("qdd", (pk._n(pf),), pk._flat(b.qdd))]
    return pk._step_outputs(pf, b, ins)


def stage_ops(pf, kernel: str, build: str = "classic") -> list[tuple[str, dict]]:
    """[(stage, op counts of its live statements before CSE)] for ``kernel`` of model ``pf``
    built by ``build`` (BUILDS)."""
    ins = KERNELS[kernel][1](pf)
    b = BUILDS[build](pf, ins)
    owner: list[str] = []
    for stage, props in STAGES:
        for prop in props:
            if prop not in ONLY[build]:
                getattr(b, prop)
        owner += [stage] * (len(b.rec.statements) - len(owner))
    outs = _outputs(kernel, pf, b, ins)
    stmts = b.rec.statements
    owner += ["(outputs)"] * (len(stmts) - len(owner))
    named = Kernel(kernel, "", ins, tuple(outs), tuple(stmts))
    live = {id(s) for s in remove_dead_code(drop_unguarded_checks(named)).body}
    out = []
    for stage, _ in STAGES:
        exprs = [s.expr for s, o in zip(stmts, owner) if o == stage and id(s) in live
                 and isinstance(s, Assign)]
        c = count_expr_ops(exprs)
        out.append((stage, {"arith": c["adds"] + c["muls"], "divs": c["divs"],
                            "sqrt": c["sqrt"], "trig": c["trig"],
                            "total": sum(c.values())}))
    return out


def report(name: str, kernels=("step", "base_step", "step_accel"), build: str = "chosen") -> dict:
    pf = load_spec(SPECS / f"{name}.toml")
    builds = {k: chosen_build(pf, k) if build == "chosen" else build for k in kernels}
    res = {k: stage_ops(pf, k, builds[k]) for k in kernels}
    forms = {k: pk._reduction_forms({"step": pk._step, "step_accel": pk._step_accel,
                                     "base_step": pk._base_step}[k]) for k in kernels}
    final = {k: optimise(forms[k][list(BUILDS).index(builds[k])], pf).ops for k in kernels}
    print(f"\n{name} ({' '.join(sorted({leg.type for leg in pf.legs}))}): ops per stage before "
          "CSE, arith (+,*) / div / sqrt / trig; builds: "
          + ", ".join(f"{k} {v}" for k, v in builds.items()))
    print(f"  {'stage':32s}" + "".join(f"{k:>24s}" for k in kernels))
    for i, (stage, _) in enumerate(STAGES):
        cells = [res[k][i][1] for k in kernels]
        print(f"  {stage:32s}" + "".join(
            f"{c['total']:7d} {c['arith']:5d}/{c['divs']:2d}/{c['sqrt']:2d}/{c['trig']:2d}"
            for c in cells))
    tot = {k: sum(c["total"] for _, c in res[k]) for k in kernels}
    print(f"  {'total before CSE':32s}" + "".join(f"{tot[k]:7d}{'':17s}" for k in kernels))
    print(f"  {'after the pipeline (manifest)':32s}" + "".join(
        f"{final[k]['total']:7d} {final[k]['adds'] + final[k]['muls']:5d}/{final[k]['divs']:2d}/"
        f"{final[k]['sqrt']:2d}/{final[k]['trig']:2d}" for k in kernels))
    return {"stages": res, "final": final}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="+")
    ap.add_argument("--build", choices=["chosen", *BUILDS], default="chosen")
    args = ap.parse_args(argv)
    for name in args.names:
        report(name, build=args.build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
