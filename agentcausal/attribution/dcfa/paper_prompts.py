"""The ``paper`` prompt set of DCFA: every instruction of the authors' released prompts, in our words.

The released code (``Automated_FA/agent_prompt/*.txt`` of
github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution) holds one
prompt per call; the repository has no licence, so no sentence of it is
copied here: each template restates the same instructions, inputs, output
fields and decision rules in this project's words, and each worked example is
our own, of the same form as the released one. Where the paper's text and the
code differ, the text's version is a second template chosen by a setting
(:mod:`agentcausal.attribution.dcfa.settings`).

=====================  =========================================  ===============================
template               released prompt (call)                      setting
=====================  =========================================  ===============================
:data:`MDI_TASK`       ``event_extraction.txt`` (MDI)              both ``mdi_cgc`` values
:data:`CGC_LISTS_TASK` ``event_causality.txt`` (CGC)               ``cgc="code"``
:data:`CGC_JUDGED_TASK` none: eqs. 3 to 6 of the paper             ``cgc="equations"``
:data:`HG_TASK`        ``failure_attribution.txt`` (HG)            always
:data:`CORRECT_TASKS`  ``root_cause_event_correction.txt`` and      ``correct_variant``
                       ``…_hand-crafted.txt`` (Correct)
:data:`SIMULATION_TASK` ``simulation_outcome.txt`` (S(i), and       ``simulation="code"``
                       S(i-1) with no root cause)
:data:`NEUTRAL_SIMULATION_TASK` none: eq. 9 and Figure 12's         ``simulation="equations"``
                       caption
DED                    ``final_failure_attribution.txt``           :mod:`~agentcausal.attribution.dcfa.ded`
=====================  =========================================  ===============================

Layout: the inputs and the instructions follow the trace block (the released
prompts put their instructions between the inputs and the example), so the
calls on one trace share the prompt prefix up to the end of the trace (prompt
caching). The released prompts render the log as a JSON object of events named
``event_<step>_1`` (one event per step); ours numbers the steps
(``<step n="3">``, :func:`agentcausal.traces.render.render_steps_info`) and the
replies name steps by number: the two name the same things. The examples
render their steps as plain lines, never with our delimiter tags.

``simulation_outcome_reverse.txt`` of the released repository is not called by
its code and has no counterpart here.

References
----------
Wang, Zehao, Lanjun Wang, Shilong Jin, Junjie Chen, and Yanghua Xiao. "DCFA: Dual-view
Causal-inspired Attribution for Failure Reasoning in LLM-based Multi-agent Systems"
(code github.com/wzhSteve/Dual-view-Causal-driven-Failure-Attribution), sections 4.1 and 4.2, appendix L (Figures 9 to 13).
"""

from __future__ import annotations

__all__ = [
    "MDI_TASK",
    "MDI_EXAMPLE",
    "CGC_LISTS_TASK",
    "CGC_LISTS_EXAMPLE",
    "CGC_JUDGED_TASK",
    "HG_TASK",
    "HG_EXAMPLE",
    "CORRECT_TASKS",
    "CORRECT_FORMATS",
    "CORRECT_EXAMPLES",
    "SIMULATION_TASK",
    "NEUTRAL_SIMULATION_TASK",
]

# ------------------------------------------------------------------ MDI (event_extraction.txt)
#: MDI: five criteria, only the marked steps, a detailed reason each, more than one step; fields: cap
MDI_TASK = (
    "Mark the potential mistakes in the run above. A potential mistake is one atomic action or statement of a "
    "step that could be the root cause of the task's failure. Check every step against these criteria:\n"
    "1. Data input error: the agent gives wrong, out-of-date or invented information as a core part of its "
    "output.\n"
    "2. Faulty assumption or shortcut: the agent meets an obstacle (an API call that fails, a file that is not "
    "found) and, instead of dealing with it, makes an unreasonable assumption or carries on with placeholder "
    "data.\n"
    "3. Core function execution failure: the agent reports a technical error or says that it could not do its "
    "own job (a web-browsing agent that cannot load a page, a file agent that cannot open a file).\n"
    "4. Unproductive loop or action: the agent keeps repeating actions that get nowhere, or does something "
    "irrelevant that does not move the task on.\n"
    "5. Other: any other likely mistake that could make the task fail.\n"
    'List in "deviations" only the steps you mark, each with its number and a detailed reason why it is a '
    "mistake. Mark more than one step.{cap}"
)

#: our own worked example of MDI (same form as the released one: a short log, one marked step)
MDI_EXAMPLE = (
    "Example. A run of three steps:\n"
    "step 0, Planner: I will find the opening hours of the city library on its website.\n"
    "step 1, Computer_terminal: exitcode: 0 (execution succeeded)\n"
    "step 2, WebSurfer: The request to the library's website failed with a ConnectionTimeout error.\n"
    'Reply: {"deviations": [{"step": 2, "reason": "The agent could not load the website, a technical failure '
    "of its core function, so the opening hours were never retrieved and the task cannot be finished as "
    'asked."}]}'
)

# ------------------------------------------------------------------ CGC (event_causality.txt)
#: CGC as the released code asks it: cause and effect lists for every step; fields: last, marked, cap
#: (``marked``: where the mistake steps come from, MDI's reasons or task 1 of a joint call)
CGC_LISTS_TASK = (
    "Build a causal graph over all steps of the run above. Pay most attention to how the mistake steps are "
    "caused by other steps or lead to other steps, mistakes and normal steps alike.\n"
    "1. Sort the steps: a step {marked} is a mistake step; every other step is a normal step.\n"
    "2. For each possible causal link from an earlier step i to a later step j, check three criteria: "
    "temporality (step i happens before step j); precondition (step i is a necessary prerequisite of step j: "
    "without it, step j would hardly have happened the same way); influence (the content or result of step i "
    "directly shapes the content, the result or the start of step j, through a clear logical or functional "
    "connection). Draw a link only where these criteria make a strong, defensible case. Look above all for "
    "three kinds of link: mistake -> mistake (one mistake leads to another); normal -> mistake (normal "
    "actions, or one normal step, set up or directly cause a later mistake); mistake -> normal (a mistake "
    "shapes later normal steps, pushing the process off course or leaving the result incomplete or wrong).\n"
    "3. Within an agent: for every ordered pair of steps of the same agent, decide whether the earlier one "
    "directly causes the later one.\n"
    "4. Across agents: for every step, look at all earlier steps, of any agent, and decide whether earlier "
    "mistakes causally influence it.\n"
    'Reply in "steps" with one entry for every step 0 to {last}: its number, "causes" (the earlier steps '
    'that cause it) and "effects" (the later steps it causes). No explanations.{cap}'
)

#: our own worked example of CGC (same form as the released one: steps, mistake reasons, the lists)
CGC_LISTS_EXAMPLE = (
    "Example. A run of three steps, with a mistake reason for step 0:\n"
    "step 0, Flight_Expert: The cheapest flight leaves on 3 May (the question asks about 5 May).\n"
    "step 1, Booking_Expert: I booked the 3 May flight found above.\n"
    "step 2, Booking_Expert: The booking is confirmed; the task is done.\n"
    "Mistake reason of step 0: the agent searched the wrong date, so every later step works on the wrong "
    "flight.\n"
    'Reply: {"steps": [{"step": 0, "causes": [], "effects": [1]}, {"step": 1, "causes": [0], "effects": [2]}, '
    '{"step": 2, "causes": [1], "effects": []}]}'
)

#: CGC as the paper's equations state it (eqs. 3 to 6): each proposed edge judged; fields: cap
CGC_JUDGED_TASK = (
    'Causal-inspired dependency graph: list in "edges" the dependency relations between steps as edges '
    "(source, target), above all those that start or end at a mistake step and carry its effect towards the "
    "final answer. For each edge judge three criteria: temporal (step source comes before step target), "
    "necessary (without step source, step target would not have happened as it did) and sufficient (step "
    "source is enough to make step target plausible), each true or false, with a one-sentence reason. An "
    "edge counts only if all three hold.{cap}"
)

# ------------------------------------------------------------------ HG (failure_attribution.txt)
#: HG: the five-step procedure and the three output fields; fields: last
HG_TASK = (
    "Find the single most fundamental root cause of the failure of the run above: the step directly "
    "responsible for the system's wrong final answer. Work in this order:\n"
    "1. The mistake agent: from the steps and the mistake reasons, find the agent responsible for the failure, "
    "the one whose actions started the wrong causal chain or who made the most critical error on the way to "
    "the wrong answer. Name it at the start of your reason.\n"
    "2. The obvious mistakes: in the mistake reasons, find every mistake of that agent that is plain from the "
    "log, such as a failed API call, a technical error message or a plainly wrong final answer.\n"
    "3. The causal path to the failure: follow these obvious mistakes along the causal graph to the system's "
    "final output, and confirm against the correct answer which of them lie on the chain that ends in the "
    "wrong answer. Some mistakes stay isolated or are put right later: they did not cause the failure.\n"
    "4. The true root cause: on that chain, pinpoint the single decisive step that settled the wrong final "
    "outcome. It is not necessarily the first or the most obvious mistake. It may be an upstream, non-obvious "
    "error (a flawed assumption, invented data, or the wrong tool chosen, which led to an obvious error "
    "further on) or a downstream, decisive error (a wrong calculation or a wrong final decision made on "
    "otherwise correct data, which caused the failure directly).\n"
    "5. The reason: write a concise, accurate reason that shows how you inferred it: which obvious mistake "
    "you found first, why it is not the true root cause, and which step is the true root cause and how the "
    "causal chain points to it.\n"
    'Reply with "log_answer" (the final wrong answer given in the log), "step" (the number of the root-cause '
    'step, 0 to {last}) and "reason".'
)

#: our own worked example of HG (same form as the released one: obvious mistakes, chain, true root cause)
HG_EXAMPLE = (
    "Example. Question: what is the population density, in people per square kilometre, of the country whose "
    "capital is Canberra? Correct answer: 3.4.\n"
    "step 1, Geography_Expert: Canberra is the capital of New Zealand.\n"
    "step 2, Data_Expert: New Zealand has 5.1 million people on 268,000 square kilometres.\n"
    "step 3, Data_Expert: The density script stopped with ZeroDivisionError.\n"
    "step 4, Data_Expert: With the script fixed, 5,100,000 / 268,000 = 19.0.\n"
    "step 5, Data_Expert: The final answer is 19.0.\n"
    "Causal graph: 1 -> 2, 2 -> 4, 3 -> 4, 4 -> 5. Mistake reasons: step 1, the wrong country; step 3, the "
    "script failed; step 5, the final answer is wrong.\n"
    "Analysis: the obvious mistakes are the script error at step 3 and the wrong answer at step 5. Step 3 was "
    "fixed at step 4, so it is off the chain to the answer, and step 5 only reports what steps 2 and 4 "
    "computed. Back along the graph, 5 depends on 4 and 2, which depend on step 1: the wrong country there "
    "made every later figure wrong, however well the script ran.\n"
    'Reply: {"log_answer": "19.0", "step": 1, "reason": "Geography_Expert. The obvious mistakes are the '
    "script error at step 3 and the wrong final answer at step 5, but step 3 was fixed at step 4 and step 5 "
    "only reports the figure of steps 2 and 4. Following the graph back from step 5 leads to step 1, where "
    'the agent named the wrong country; that error decided every later figure, so step 1 is the true root cause."}'
)

# ------------------------------------------------------------------ Correct (root_cause_event_correction*.txt)
#: Correct's two variants of the released code, keyed by ``correct_variant``; no fields
CORRECT_TASKS = {
    "algorithm_generated": (
        "Correct the run above so that it reaches the correct answer, keeping the style of the original log.\n"
        "1. Work out why the steps above led to the failure, focusing on the mistake reasons.\n"
        "2. Correct every mistake step, and every step that the causal graph shows passing a wrong effect on "
        "to the final answer, using the correct answer as the reference, so that the corrected run ends in "
        "the correct answer.\n"
        "3. Limit the corrections to factual elements such as names, terms, numbers or labels: add no new "
        "information, reasoning or events.\n"
        "4. Keep the corrected run in the same style, structure and format as the original steps."
    ),
    "hand_crafted": (
        "Correct the run above against the correct answer, keeping the style of the original log.\n"
        "1. Work out why the steps above led to the failure, focusing on the mistake reasons.\n"
        "2. Correct every mistake step, and every step that the causal graph shows passing a wrong effect on "
        "to the final answer, using the correct answer as the reference.\n"
        "3. Remove redundant content inside each step, such as code snippets, intermediate calculations, long "
        "analysis that is not needed to understand the step, and partial outputs that do not change the "
        "final answer.\n"
        "4. Keep the number of steps: each corrected step stands for exactly one original step.\n"
        "5. Correct only factual elements (names, terms, numbers, labels): add no new reasoning, events or "
        "steps.\n"
        "6. Keep the original style, structure and format of the steps."
    ),
}

#: Correct's reply format per variant (ours: entries by step number); fields: last, max_chars.
#: Algorithm-Generated: "" = unchanged (the same trace as repeating the step, in fewer tokens);
#: Hand-Crafted: every step rewritten, as the released prompt returns every event with its redundant
#: content removed, so the corrected prefix of a counterfactual trace is the compressed one
CORRECT_FORMATS = {
    "algorithm_generated": (
        'Reply with one entry per step 0 to {last} in "steps", each {{"step": its number, "content": the '
        'corrected content{max_chars}}}, with content "" when the step needs no change.'
    ),
    "hand_crafted": (
        'Reply with one entry per step 0 to {last} in "steps", each {{"step": its number, "content": the step '
        "as corrected, with its redundant content removed{max_chars}}}. Give every step its rewritten content, "
        "a step with nothing to correct too: never leave a content empty."
    ),
}

#: our own examples of Correct's reply per variant (the released prompts show only the output format)
CORRECT_EXAMPLES = {
    "algorithm_generated": (
        "Example of the reply for a run of two steps whose step 1 needed a correction: "
        '{"steps": [{"step": 0, "content": ""}, {"step": 1, "content": "The library opens at 9:00 on Sundays."}]}'
    ),
    "hand_crafted": (
        "Example of the reply for a run of two steps whose step 1 needed a correction: "
        '{"steps": [{"step": 0, "content": "I will look up the library\'s Sunday opening hours."}, '
        '{"step": 1, "content": "The library opens at 9:00 on Sundays."}]}'
    ),
}

# ------------------------------------------------------------------ Simulation (simulation_outcome.txt)
#: Simulation as the released code asks it, for S(i) (a root cause named) and S(i-1) (none); no fields
SIMULATION_TASK = (
    "The run above is partly corrected. The root-cause step named above is the step that originally led to "
    "the failure; only it and the steps it directly affects have been corrected, and other steps may still "
    "contain errors. Use the corrected root-cause step and the steps it directly affects to work out how the "
    "rest of the run should have gone, and derive the correct final answer.\n"
    "1. Identify the root-cause step and the corrected steps it directly affects.\n"
    "2. From these corrections, rebuild the sequence of later steps and interactions as it should have gone, "
    "correcting the errors that depend on them.\n"
    "3. Derive the correct final answer to the question from the fully corrected sequence.\n"
    "4. Explain briefly how the root-cause step led to the original wrong answer and how the corrections "
    "resolve it.\n"
    'Reply with "reason" (that explanation) and "answer" (the correct final answer to the question).'
)

#: Simulation as the paper's text states it (eq. 9, Figure 12's caption): no candidate; fields: revision
NEUTRAL_SIMULATION_TASK = (
    "{revision} Later steps are from the original run and may contradict the revised ones. Starting from "
    "the revised steps, reconstruct briefly how the run would continue (which later steps would change and "
    'how), in "reasoning"; then give in "outcome" the final answer the team would give to the question, '
    "as short as possible."
)
