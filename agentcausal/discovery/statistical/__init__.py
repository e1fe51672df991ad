"""The statistical algorithm pool (PC, FCI, GES, Exact Search, DirectLiNGAM) run with causal-learn, and the
forkserver preload that starts its workers warm."""
