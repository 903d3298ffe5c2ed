"""mechgen: symbolic generator of flat scalar kernels for the dynamics of mechanisms."""

__version__ = "0.1.0"
