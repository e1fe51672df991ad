"""Imported once by the forkserver of :mod:`agentcausal.discovery.statistical.algorithms`, so workers start warm."""

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import numpy  # noqa: F401
    from causallearn.search.ConstraintBased.FCI import fci  # noqa: F401
    from causallearn.search.ConstraintBased.PC import pc  # noqa: F401
    from causallearn.search.FCMBased import lingam  # noqa: F401
    from causallearn.search.ScoreBased.ExactSearch import bic_exact_search  # noqa: F401
    from causallearn.search.ScoreBased.GES import ges  # noqa: F401
    from pgmpy.structure_score import BIC  # noqa: F401  (discrete-score exact search)

    import agentcausal.discovery.statistical.algorithms  # noqa: F401
