"""The LLM layer: one gateway, profiles and routing, usage accounting, the embedded local model."""

from agentcausal.llm.call import LLMCall, Routing
from agentcausal.llm.gateway import Gateway, Message
from agentcausal.llm.profiles import Profile, ProfileSet, load_profiles
from agentcausal.llm.usage import StageUsage, UsageLedger

__all__ = [
    "Gateway",
    "LLMCall",
    "Message",
    "Routing",
    "Profile",
    "ProfileSet",
    "StageUsage",
    "UsageLedger",
    "load_profiles",
]
