"""The serial family: chains and kinematic trees on a fixed or free base (paper 003).

spec.py (TOML specs, ChainBuilder), urdf.py (URDF robots) -> model.Chain -> kernels.py (the
builders, the manifest, ``SERIAL``)."""
