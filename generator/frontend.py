"""One front end: a spec file -> the model of its family.

    load("arm.toml")        -> Chain      (serial chain or tree; family = "serial", the default)
    load("panda.toml")      -> Chain      ([mechanism] urdf = "...": a URDF robot)
    load("hexapod.toml")    -> Platform   (family = "parallel")
    load("fourbar.toml")    -> Linkage    (family = "linkage": closed loops, docs/linkage.md)

The file is read here once (UTF-8 TOML, errors naming the file); each family's reader
(spec.py, urdf.py through spec.py, platform_spec.py) takes the parsed tables. Every family
follows one gravity rule: a spec states ``gravity`` in frame 0, default 0
(``fields.GRAVITY_DEFAULT``), and the manifest records it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from mechgen.generator.model import Chain, ModelError
from mechgen.generator.families.parallel.platform import Platform
from mechgen.generator.families.parallel.spec import is_parallel, platform_from_dict
from mechgen.generator.families.contact.spec import interface_from_dict, is_contact
from mechgen.generator.families.linkage.spec import is_linkage, linkage_from_dict
from mechgen.generator.families.serial.spec import chain_from_dict, chain_from_urdf_spec


def read_toml(path: Path) -> dict[str, Any]:
    """The tables of a spec file; a ModelError naming the file for anything unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ModelError(f"{path}: cannot read the spec: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ModelError(f"{path}: not UTF-8 text (TOML is UTF-8): byte {e.object[e.start]:#04x} "
                         f"at offset {e.start}") from None
    except ValueError as e:   # a NUL byte in the path
        raise ModelError(f"{path!r}: cannot read the spec: {e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ModelError(f"{path}: not valid TOML: {e}") from None


def load(path: str | Path) -> Any:
    """A spec file -> a Chain (serial, a tree from a URDF), a Platform (``family =
    "parallel"``) or a docking Interface (``family = "contact"``)."""
    path = Path(path)
    data = read_toml(path)
    if is_parallel(data):
        return platform_from_dict(data, path.name)
    if is_contact(data):
        return interface_from_dict(data, path.name)
    if is_linkage(data):
        return linkage_from_dict(data, path.name)
    if isinstance(data.get("mechanism"), dict) and "urdf" in data["mechanism"]:
        return chain_from_urdf_spec(data, path)
    return chain_from_dict(data, path.name)
