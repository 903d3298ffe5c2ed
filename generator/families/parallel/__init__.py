"""The parallel family: a controlled body C on legs whose last joint is cut (paper 000).

spec.py (TOML specs) -> platform.py (Platform, Leg) with legs/ (one module per leg type) ->
kernels.py (the builders, the manifest, ``PARALLEL``)."""
