"""Datasets for causal discovery: the bnlearn and Auto MPG benchmarks, user tables with their metadata
(validated before any method), the ``Dataset`` type both loaders build, and the memorisation control
(``--anonymise``)."""
