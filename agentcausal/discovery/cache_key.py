"""The cache key of one discovery outcome: what determines it, and nothing else."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from agentcausal.discovery.config import DiscoveryConfig
from agentcausal.discovery.data.dataset_model import Dataset, DatasetHeader
from agentcausal.discovery.data.datasets import metadata_text
from agentcausal.discovery.mac.prompts import PROMPT_VERSIONS
from agentcausal.discovery.method_settings import llm_temperature, method_handler, method_stages
from agentcausal.discovery.variants import RunVariant
from agentcausal.exceptions import AgentCausalError
from agentcausal.llm import Gateway

__all__ = ["discovery_key", "planned_key"]


def discovery_key(
    ds: Dataset, method: RunVariant, config: DiscoveryConfig, gw: Gateway | None = None, *, seed: int = 0
) -> str:
    """Cache key of one outcome: what determines it and nothing else.

    sha256 of (``joblib.hash`` of the data array, column names and data type;
    dataset name and the run seed; the method's display name; the config, its executor resolved
    (never ``auto``); for LLM methods the sampling temperature the run uses
    when it is not the profile's (:func:`llm_temperature`), the metadata and
    its prompt text (variable descriptions enter MAC's prompts), the prompt
    version and each stage's routing identity: ``profile:model``, context
    window, endpoint and dialect, :meth:`~agentcausal.llm.gateway.Gateway.stage_identity`), and the
    reply-cache namespace its calls use (the display name, :func:`~agentcausal.discovery.method_settings.method_handler`). Statistical
    methods ignore the LLM parts. The true graph is not in the key: the
    outcome is scored outside the cached step, against the current truth.
    """
    return planned_key(ds.content_hash(), ds.name, lambda: ds, method, config, gw, seed=seed)


def planned_key(
    data_hash: str,
    name: str,
    header: Callable[[], Dataset | DatasetHeader],
    method: RunVariant,
    config: DiscoveryConfig,
    gw: Gateway | None = None,
    *,
    seed: int = 0,
) -> str:
    """:func:`discovery_key` from a dataset's hash and name (a plan item's: no row sampled).

    Parameters
    ----------
    data_hash : :meth:`Dataset.content_hash` of the rows the job runs on
    name : the dataset's name
    header : called for an LLM method only: the dataset (or its header) whose metadata enters the key
    method, config, gw, seed : as :func:`discovery_key`

    Raises
    ------
    DatasetError from ``header``.
    """
    config = method_handler(method, config)[1]  # the executor here, never "auto"
    stages = method_stages(method.spec, config)
    models = {}
    for s in stages:
        try:
            models[s] = gw.stage_identity(s) if gw is not None else ["none", 0]
        except AgentCausalError:
            models[s] = ["unrouted", 0]
    about = header() if stages else None
    blob = json.dumps(
        {
            "data": data_hash,
            "dataset": name,
            "seed": seed,
            "method": method.name,
            "config": config.model_dump(mode="json", exclude={"executor_fallback", "samples"})
            if stages
            else {"timeout": config.algorithm_timeout_s},
            **({"temperature": t} if (t := llm_temperature(method.spec, config)) is not None else {}),
            "prompt_version": PROMPT_VERSIONS[config.mac.prompts] if stages else "",
            "models": models,
            "metadata": [about.metadata.model_dump(mode="json"), metadata_text(about)] if about is not None else None,
            # the reply-cache namespace its calls read (its own): the record's usage is its own calls'
            **({"reply_cache": method.name} if stages else {}),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()
