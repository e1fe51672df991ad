"""What MAC would send, without a request: each agent's messages (``discover --show-prompts``,
through :func:`agentcausal.discovery.previews.discover_previews`).

Every message comes from the builders a run uses
(:func:`~agentcausal.discovery.mac.prompts.algorithm_messages`,
:func:`~agentcausal.discovery.mac.prompts.graph_messages`,
:func:`~agentcausal.discovery.mac.prompts.coder_messages`), with the dataset's
real context (variables, metadata, the subset S of the first seed); where an
input is an earlier agent's reply (a proposal, the winning algorithm, Meta
Fusion's sentences of the data graph, a script's error), the preview shows
:func:`agentcausal.llm.preview.placeholder` text instead.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3-§3.5, app. A.
"""

from __future__ import annotations

from typing import Any

from agentcausal.discovery.data.dataset_model import Dataset
from agentcausal.discovery.data.datasets import metadata_text
from agentcausal.discovery.mac import prompts as P
from agentcausal.discovery.mac.dcm import algorithm_context
from agentcausal.discovery.mac.executor import ENCODINGS
from agentcausal.discovery.mac.prompts import GraphContext
from agentcausal.discovery.mac.settings import CODER_STAGE, DEBATE_STAGE, MACSettings
from agentcausal.llm.preview import PromptPreview, placeholder

__all__ = ["mac_method_previews"]


def _debate(
    method: str, stage_name: str, build, settings: MACSettings, judge_extra: dict[str, Any]
) -> list[PromptPreview]:
    """Affirmative, Negative, (the Affirmative's revision when rounds > 1) and Judge of one debate."""
    out = [PromptPreview(method, DEBATE_STAGE, f"{stage_name}: Affirmative", build("affirmative"))]
    if settings.single_agent:
        return out
    out.append(
        PromptPreview(
            method, DEBATE_STAGE, f"{stage_name}: Negative", build("negative", own=placeholder("the Affirmative"))
        )
    )
    if settings.rounds > 1:
        later = "round 2" if settings.rounds == 2 else f"rounds 2-{settings.rounds}"
        out.append(
            PromptPreview(
                method,
                DEBATE_STAGE,
                f"{stage_name}: Affirmative revising ({later})",
                build(
                    "revise",
                    own=placeholder("the Affirmative, last round"),
                    other=placeholder("the Negative, last round"),
                ),
            )
        )
    out.append(
        PromptPreview(
            method,
            DEBATE_STAGE,
            f"{stage_name}: Judge",
            build(
                "judge", own=placeholder("the Affirmative (A)"), other=placeholder("the Negative (B)"), **judge_extra
            ),
        )
    )
    return out


def mac_method_previews(
    method: str, ds: Dataset, settings: MACSettings, *, seed: int = 0, executor: str = "coding"
) -> list[PromptPreview]:
    """The calls of one MAC method (or ablation) on ``ds``, in run order, as previews.

    Parameters
    ----------
    method : the method's name as the run shows it (e.g. ``mac``, ``mac (rounds 2)``)
    ds : Dataset
    settings : MACSettings the method runs with (``stages``, ``single_agent``, ``rounds``, ``prompts`` ...)
    seed : int, draws the subset S shown in algorithm mode
    executor : the executor that runs here ("coding" or "typed"); the coder's calls are shown either way,
        labelled when they will not run

    Returns
    -------
    list of PromptPreview: DCM's algorithm debate, the coder and its retry message, then MDM's graph debate
    (what the method's stages run).
    """
    style = settings.prompts
    out: list[PromptPreview] = []
    if settings.stages != "mdm_only":
        ctx = algorithm_context(ds, settings, seed)
        out += _debate(
            method,
            "DCM algorithm debate",
            lambda role, **kw: P.algorithm_messages(style, role, ctx, **kw),
            settings,
            {},
        )
        note = "" if executor == "coding" else " (not sent in this run: the typed executor runs the algorithm)"
        winner = placeholder("the algorithm debate (the winning algorithm)")
        first = P.coder_messages(
            style,
            algorithm=winner,
            params=placeholder("the algorithm debate (its parameters)"),
            usage=placeholder("the pool's call of the winning algorithm"),
            n=ds.n,
            d=ds.d,
            columns=", ".join(ds.variables),
            data_type=ds.data_type,
            encodings="\n".join(f"  {k}: {v}" for k, v in ENCODINGS.items()),
        )
        out.append(PromptPreview(method, CODER_STAGE, f"DCM Causal Coding Executor: write the script{note}", first))
        out.append(
            PromptPreview(
                method,
                CODER_STAGE,
                f"DCM Causal Coding Executor: debug a failed script{note}",
                [
                    {"role": "assistant", "content": placeholder("the coder (its last script)")},
                    P.coder_retry_message(style, P.delimit("error", placeholder("the sandbox (the script's error)"))),
                ],
            )
        )
    if settings.stages != "dcm_only":
        evidence = (placeholder("Meta Fusion (the data graph G_C as sentences)"),) if settings.stages == "full" else ()
        gctx = GraphContext(variables=ds.variables, metadata=metadata_text(ds), evidence=evidence)
        kw: dict[str, Any] = dict(with_reason=settings.edge_reason_chars != 0, judge_rule=settings.judge_rule)
        out += _debate(
            method,
            "MDM graph debate",
            lambda role, **k: P.graph_messages(style, role, gctx, **kw, **k),
            settings,
            {
                "disagreements": placeholder(
                    "the Affirmative and the Negative (their disagreements, computed from A and B)"
                )
            },
        )
    return out
