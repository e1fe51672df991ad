"""MAC: Multi-Agent Causal Discovery (Le et al., arXiv:2407.15073).

DCM (:mod:`.dcm`, alg. 2) chooses and runs a statistical algorithm, Meta Fusion
(:mod:`.fusion`, §3.5) turns its graph into sentences, MDM (:mod:`.mdm`, alg. 3)
refines the graph by debate (alg. 1 and 3: the one operator in both modes). Prompts: :mod:`.prompts`
(the ``small`` set and the builders) and :mod:`.paper_prompts` (the ``paper`` set). :func:`run_mac` runs it all.
"""

from agentcausal.discovery.mac.pipeline import MACResult, run_mac
from agentcausal.discovery.mac.settings import MACSettings

__all__ = ["MACResult", "MACSettings", "run_mac"]
