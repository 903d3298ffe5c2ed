"""The nominal value of a kernel input, read from a generated mechanism's manifest: the
default parameters for ``p``, the spec's home pose for ``x`` (when it has one), zeros otherwise.
Tests that compare two builds of the same kernel perturb their random states around it."""

from __future__ import annotations

from math import prod

import numpy as np


def nominal_input(manifest: dict, port: dict) -> np.ndarray:
    """The nominal value (flat, float64) of the input ``port`` of a kernel's manifest entry."""
    size = prod(port["shape"])
    if port["name"] == "p":
        return np.array([manifest["parameter_defaults"][k] for k in manifest["parameters"]],
                        dtype=float)
    if port["name"] == "x" and len(manifest.get("home") or []) == size:
        return np.array(manifest["home"], dtype=float)
    return np.zeros(size)
