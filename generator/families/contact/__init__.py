"""The contact family: contact and latch kernels of an androgynous peripheral docking interface
(APAS-like). interface.py: the model; geometry.py: the units' geometry (numeric, baked);
primitives.py: the closed-form contact primitives; spec.py: the TOML reader; kernels.py: the
kernels and the family."""
