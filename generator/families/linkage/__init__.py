"""The linkage family: closed-loop linkages with redundant constraints (papers 001 and 004).
model.py: the model; spec.py: the TOML reader (spanning tree, frames); analysis.py: rank, kept
rows and independent coordinates at generation; kernels.py: the kernels and the family. The
closure equations are in generator/algorithms/loops.py."""
