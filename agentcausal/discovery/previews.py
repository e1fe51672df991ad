"""``discover --show-prompts``: the messages every MAC method of a run would send, without a request.

For each dataset and each MAC method (or ablation, rounds variant, anonymised
variant) of the run, :func:`discover_previews` renders the calls of
:func:`agentcausal.discovery.mac.preview.mac_method_previews` with the settings
the run would hand that method; other methods are skipped (their prompts have
no previews yet).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentcausal.discovery.data.anonymise import anonymise
from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import load_spec
from agentcausal.discovery.mac.preview import mac_method_previews
from agentcausal.discovery.method_settings import mac_settings
from agentcausal.discovery.variants import RunVariant
from agentcausal.llm.preview import PromptPreview

__all__ = ["discover_previews"]


def discover_previews(
    datasets: Sequence[str],
    methods: Sequence[RunVariant],
    config: Any,
    *,
    n: int = 1000,
    seed: int = 0,
    loaded: Mapping[str, Dataset] | None = None,
) -> list[PromptPreview]:
    """Previews of every MAC method among ``methods`` on every dataset (other methods are skipped).

    Parameters
    ----------
    datasets : dataset specs (benchmark names or paths)
    methods : the run's method variants (rounds and anonymised ones included)
    config : DiscoveryConfig (its ``mac`` settings, resolved per method as the run resolves them)
    n, seed : rows and seed of a benchmark sample (the subset S is drawn with ``seed``)
    loaded : spec -> Dataset already read (user datasets)

    Returns
    -------
    list of PromptPreview

    Raises
    ------
    DatasetError as :func:`~agentcausal.discovery.data.datasets.load_spec`.
    """
    config = config.resolved()
    out: list[PromptPreview] = []
    for spec in datasets:
        ds = (loaded or {}).get(spec) or load_spec(spec, n=n, seed=seed)
        for m in methods:
            if m.spec.family != "mac":
                continue
            shown = anonymise(ds, m.anonymise)[0] if m.anonymise != "none" else ds
            settings = mac_settings(m, config)
            out += [
                p._replace(method=f"{m.name} on {ds.name}")
                for p in mac_method_previews(m.name, shown, settings, seed=seed, executor=settings.executor)
            ]
    return out
