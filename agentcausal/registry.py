"""Every method of both halves, listed once, explicitly, and each half's run engine built with its table.

:data:`ATTRIBUTION_METHODS` and :data:`DISCOVERY_METHODS` hold each method module's spec, imported by name
(:class:`~agentcausal.methods.MethodSpec`: name, run, settings model, presets, stages, prompt version, what it
needs); nothing registers itself. A lookup of an unknown name is a ``ConfigError`` naming the known methods of
that half (:class:`~agentcausal.methods.MethodTable`). :data:`ATTRIBUTION` and :data:`DISCOVERY` are the
halves of the run engine (:class:`~agentcausal.runs.half.RunHalf`) over those tables.

The halves never import this module (``.importlinter``): the command line, the flows and tasks, the reports
and the benchmarks hand them the specs, or their half's table.
"""

from __future__ import annotations

from typing import Any

from agentcausal.attribution import a2p, all_at_once, binary_search, dcfa, echo, step_by_step
from agentcausal.attribution.jobs import AttributionHalf
from agentcausal.attribution.spec import AttributionSpec
from agentcausal.discovery import spec as discovery
from agentcausal.discovery.jobs import DiscoveryHalf
from agentcausal.discovery.spec import DiscoverySpec
from agentcausal.methods import MethodTable

__all__ = ["ATTRIBUTION_METHODS", "DISCOVERY_METHODS", "ATTRIBUTION", "DISCOVERY"]

#: every attribution method, in the order ``attribute --help`` lists them
ATTRIBUTION_METHODS: MethodTable[AttributionSpec[Any]] = MethodTable(
    "attribution",
    (all_at_once.SPEC, step_by_step.SPEC, binary_search.SPEC, dcfa.DCFA, dcfa.DCFA_GCA_ONLY, a2p.SPEC, echo.SPEC),
)

#: every discovery method, in the order ``discover --help`` lists them
DISCOVERY_METHODS: MethodTable[DiscoverySpec] = MethodTable(
    "discovery",
    (
        discovery.PC,
        discovery.FCI,
        discovery.GES,
        discovery.EXACT_SEARCH,
        discovery.DIRECT_LINGAM,
        discovery.MAC,
        discovery.MAC_SINGLE,
        discovery.DCM_ONLY,
        discovery.MDM_ONLY,
        discovery.ZERO_SHOT,
        discovery.REACT,
        discovery.LLM_SCD,
        discovery.ILS_CSL,
    ),
)

#: the attribution half of the run engine
ATTRIBUTION = AttributionHalf(ATTRIBUTION_METHODS)
#: the discovery half of the run engine
DISCOVERY = DiscoveryHalf(DISCOVERY_METHODS)
