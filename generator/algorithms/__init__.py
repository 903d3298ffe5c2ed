"""The papers' algorithms, one file each, written over the pruning scalar matrices."""
