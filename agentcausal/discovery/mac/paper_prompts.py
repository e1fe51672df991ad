"""The ``paper`` prompt set of MAC: each agent's Role, Goal, Causal Principles, Procedure and Output Format.

MAC shows its prompts only as images (figures 6 and 7) and released no code,
so these texts are our own, written from what the paper's text says each part
holds (§3.3-§3.5, app. A.1-A.2):

* MDM's three agents (alg. 1): the Affirmative proposes; the Negative proposes a
  plausible alternative under the same evidence, aimed at the disputed
  decisions; the Judge scores the disagreements (skeleton, colliders, edge
  directions in graph mode) against criteria drawn from the evidence and
  names the winner. The paper leaves the Judge's metric open (app. A.1); here
  each criterion goes to the side with more supported decisions
  (``MACSettings.judge_rule``).
* The causal principles of graph mode (app. A.1): adjacency by conditional
  independence under causal sufficiency and acyclicity; colliders (v-structures)
  A -> B <- C, where A and C are independent but dependent given B; the other
  directions by acyclicity and the causal order (mechanism, time) the
  metadata gives; no cycles; the data graph as evidence with the limits of its
  sample and assumptions.
* Algorithm mode (app. A.2, DCM step (i)): the pool's assumptions (causal
  sufficiency, linearity, Gaussianity, hidden confounders, sample size against
  variables) and the limits of the subset S, a few rows that show the data's
  type and scale but cannot test a dependence.
* The Causal Coding Executor (§3.4, DCM step (ii)): writes, runs and debugs a
  causal-learn script on the full data.
* Meta Fusion's text (§3.5): the header of the data graph's sentences, I_c.

Every reply schema puts the reasons before the decision
(:mod:`agentcausal.discovery.mac.prompts` builds them). The context (task,
metadata, data or data graph, the proposals under debate) comes first and the
role's part last, so calls of one debate share a prefix an inference server can
cache.

References
----------
Le et al. "Multi-Agent Causal Discovery Using Large Language Models." arXiv:2407.15073, §3.3-§3.5, app. A.
"""

from __future__ import annotations

__all__ = [
    "SYSTEM",
    "FUSION_HEADER",
    "GRAPH_PRINCIPLES",
    "ALGORITHM_PRINCIPLES",
    "CODER_SYSTEM",
    "CODER_TEMPLATE",
    "CODER_RETRY_TEMPLATE",
    "algorithm_prompt",
    "graph_prompt",
]

SYSTEM = (
    "You are one agent of MAC, a multi-agent causal discovery framework in which agents debate. Follow "
    "your role's procedure and reply with one JSON object in the output format given, nothing else."
)

#: heads Meta Fusion's sentences (I_c) in the graph prompts
FUSION_HEADER = (
    "# Causal metadata from the data (Meta Fusion)\nThe graph a statistical causal discovery algorithm "
    "found on the full data, as its edges and then the orderings they imply. It is evidence, not "
    "ground truth."
)

GRAPH_PRINCIPLES = """\
1. Skeleton. Assume causal sufficiency (no hidden common cause of two listed variables) and no feedback \
loops. Two variables are adjacent, one a direct cause of the other, exactly when no set of the other \
variables makes them conditionally independent. A dependence that other variables fully account for (a \
chain X -> M -> Y, or a common cause X <- C -> Y) is not a direct edge.
2. Colliders (v-structures). In A -> B <- C with A and C not adjacent, B is a collider: A and C are \
independent on their own and become dependent once B is conditioned on. A collider fixes both arrows into \
B; claim one only where the descriptions or the data graph support two separate causes of B.
3. Directions. Orient the other edges so that no new collider and no cycle appears, and by the causal \
order the descriptions give: a cause comes before its effect in time, and the direction is the one in which \
a known mechanism of the domain produces the effect (background conditions and exposures before what they \
influence, diseases before their symptoms and test results).
4. No cycles. The graph is a DAG: no variable may be its own ancestor.
5. The data's limits. A data graph is one algorithm's estimate from a finite sample under its own \
assumptions: it can miss weak edges, keep spurious ones, and leave directions undetermined (---, o->). \
Weigh it against the descriptions, and where they disagree say which you follow and why."""

ALGORITHM_PRINCIPLES = """\
1. Shared assumptions. Every pool algorithm assumes no feedback loops. pc, ges, exact_search and \
direct_lingam also assume causal sufficiency (no hidden common cause of two variables); fci does not, and \
marks what hidden causes leave undetermined (a PAG).
2. Constraint-based search (pc, fci) finds the skeleton with conditional-independence tests, orients \
colliders (v-structures) from them and propagates the rest. Each test needs enough rows for its \
conditioning set, more when discrete variables have many states. chisq or gsq suit discrete data, \
fisherz continuous, roughly Gaussian data.
3. Score-based search (ges, exact_search) looks for the graph with the best score (BDeu or BIC); \
exact_search is exact but its cost grows exponentially with the number of variables.
4. Functional assumptions. direct_lingam needs linear relations with non-Gaussian noise on continuous data \
and orients every edge; the others leave what the data cannot tell apart (a Markov equivalence class) \
undetermined.
5. The sample's limits. The rows shown are a small random subset S: enough to see the data's type, \
scale and states, too few to test any dependence. The chosen algorithm runs on all rows."""

_ALGO_CONTEXT = """\
# Task
Choose the statistical causal discovery algorithm that the executor will run on the full data.

# Variables and metadata
{metadata}

# Data
{n} rows, {d} variables, {data_type}. A random subset S of {k} rows (columns in order {columns}):
{rows}

# Algorithm pool
{pool}
"""

_ALGO_ROLES = {
    "affirmative": """\
# Role
You are the Affirmative. You propose the algorithm that the debate examines.

# Goal
Pick the pool algorithm, and for pc or fci its test and significance level, whose assumptions the data and \
the domain satisfy best.

# Causal principles
{principles}

# Procedure
1. State what the data are: type, number of rows against number of variables, states or scales seen in S.
2. From the metadata, judge whether hidden common causes are likely and whether relations look linear.
3. Check each pool algorithm's assumptions against steps 1 and 2.
4. Choose the algorithm that fits best and name the assumption your choice relies on most.

# Output format
One JSON object: "reason" first (your steps 1-4, concisely), then "algorithm", and for pc or fci \
"indep_test" and "alpha".""",
    "revise": """\
# The debate so far
Your last proposal:
{own}
The Negative's alternative:
{other}

# Role
You are the Affirmative. You defend or revise your proposal after the Negative's alternative.

# Goal
Keep your algorithm if its assumptions still fit best, or switch to the one that does.

# Causal principles
{principles}

# Procedure
1. Take the Negative's strongest objection and test it against the data and the metadata.
2. Keep your choice if the objection fails; otherwise adopt the better-fitting algorithm.
3. Say which assumption decides it.

# Output format
One JSON object: "reason" first (your steps 1-3), then "algorithm", and for pc or fci "indep_test" and \
"alpha".""",
    "negative": """\
# The Affirmative's proposal
{own}

# Role
You are the Negative. You propose a plausible alternative under the same evidence.

# Goal
Find the assumption of the Affirmative's choice that the data or the domain most likely break, and \
propose a different pool algorithm that does not depend on it.

# Causal principles
{principles}

# Procedure
1. List the assumptions the Affirmative's algorithm needs.
2. Pick the one the data (type, rows against variables, S) or the metadata most put in doubt.
3. Propose a different pool algorithm that avoids it, and show that it fits the data at least as well.

# Output format
One JSON object: "reason" first (your steps 1-3), then "algorithm" (not the Affirmative's), and for pc or \
fci "indep_test" and "alpha".""",
    "judge": """\
# Proposals
A (the Affirmative's):
{own}
B (the Negative's):
{other}

# Role
You are the Judge. You decide which proposal the executor runs.

# Goal
Name the proposal whose assumptions the evidence supports best.

# Causal principles
{principles}

# Procedure
Score A and B on each criterion, one point to the better fit:
1. data type (discrete or continuous) and the test it needs;
2. assumptions (causal sufficiency, linearity, Gaussianity, hidden confounders) against the metadata;
3. rows against variables: the power of the tests, the cost of the search.
The proposal with more points wins; on a tie, the one whose argument rests on fewer doubtful assumptions.

# Output format
One JSON object: "reason" first (your scoring, criterion by criterion), then "winner": "A" or "B".""",
}

_GRAPH_CONTEXT = """\
# Task
Causal discovery: find the causal graph, a DAG of direct cause -> effect edges, over the variables below.

# Variables and metadata
{metadata}
{evidence}"""

_EDGES = (
    'then "edges": every edge of your graph, each as "reason" (why this direct edge: mechanism, time '
    'order, evidence) then "cause" and "effect"'
)
_EDGES_BARE = 'then "edges": every edge of your graph, each as "cause" and "effect"'

_GRAPH_ROLES = {
    "affirmative": """\
# Role
You are the Affirmative. You propose the causal graph that the debate examines.

# Goal
Propose the DAG that the evidence supports best: the variables' descriptions and, where given, the data graph.

# Causal principles
{principles}

# Procedure
1. Skeleton: for each pair of variables, decide whether they are adjacent, using the descriptions and, \
where given, the data graph.
2. Colliders: find the v-structures A -> B <- C that the evidence supports.
3. Directions: orient the remaining edges by mechanism and time, creating no new collider and no cycle.
4. Check that the graph is acyclic; if not, drop the least supported edge of each cycle.

# Output format
One JSON object: "reasoning" first (your steps 1-4, concisely), {edges}. List no edge twice.""",
    "revise": """\
# The debate so far
Your last graph:
{own}
The Negative's alternative:
{other}

# Role
You are the Affirmative. You defend or revise your graph after the Negative's alternative.

# Goal
Keep the decisions of yours that the evidence supports and adopt the Negative's that it supports better.

# Causal principles
{principles}

# Procedure
1. For each edge where the graphs differ (present in one only, a collider in one only, reversed), weigh \
the two arguments against the descriptions, the data graph where given, and the principles.
2. Keep or change each decision accordingly.
3. Check that the graph is acyclic.

# Output format
One JSON object: "reasoning" first (your steps 1-3), {edges}.""",
    "negative": """\
# The Affirmative's graph
{own}

# Role
You are the Negative. You propose a plausible alternative graph under the same evidence.

# Goal
Challenge the Affirmative's disputed decisions: edges the evidence does not support, links it misses, \
colliders it asserts or overlooks, directions it reverses. Keep the decisions you cannot fault.

# Causal principles
{principles}

# Procedure
1. Skeleton: find pairs the Affirmative links without support, and supported links it leaves out.
2. Colliders: check every v-structure it asserts, and those the evidence implies that it lacks.
3. Directions: check each remaining direction against mechanism and time.
4. Change what fails the checks, answering the Affirmative's reasons, and check that your graph is acyclic.

# Output format
One JSON object: "reasoning" first (your steps 1-4), {edges}. Your graph must differ from the \
Affirmative's.""",
    "judge": """\
# Graphs under debate
Graph A (the Affirmative's):
{own}
Graph B (the Negative's):
{other}

# Disagreements
{disagreements}

# Role
You are the Judge. You decide which graph the debate returns.

# Goal
Decide, disagreement by disagreement, which graph the evidence supports: the descriptions and their \
mechanisms, the data graph where given, the causal principles.

# Causal principles
{principles}

# Procedure
1. Skeleton: for each pair linked in one graph only, decide whether the evidence supports a direct edge.
2. Colliders: for each v-structure in one graph only, decide whether the evidence supports it.
3. Directions: for each reversed edge, decide which direction mechanism and time support.
{verdict_step}

# Output format
One JSON object: "reason" first (your steps, disagreement by disagreement), then {verdict_fields}.""",
}

_VERDICT = {
    "criteria": (
        "4. Each criterion (skeleton, colliders, directions) goes to the graph with more supported "
        "decisions in it, or is a tie when they are even.",
        '"skeleton", "colliders" and "directions", each "A", "B" or "tie"',
    ),
    "overall": (
        "4. Name the graph with more supported decisions overall, or a tie when they are even.",
        '"winner": "A", "B" or "tie"',
    ),
}


def algorithm_prompt(role: str, base: dict, own: str, other: str) -> str:
    """The user prompt of one algorithm-mode call: the shared context, then the role's part.

    Parameters
    ----------
    role : "affirmative", "revise", "negative" or "judge"
    base : the context's fields (metadata, n, d, data_type, k, columns, rows, pool), already delimited
    own, other : the proposals under debate, each its algorithm and argument as text ("" when none)

    Raises
    ------
    KeyError on an unknown role.
    """
    return (
        _ALGO_CONTEXT.format(**base)
        + "\n"
        + _ALGO_ROLES[role].format(principles=ALGORITHM_PRINCIPLES, own=own, other=other)
    )


def graph_prompt(
    role: str,
    metadata: str,
    evidence: str,
    own: str,
    other: str,
    disagreements: str,
    judge_rule: str = "criteria",
    with_reason: bool = True,
) -> str:
    """The user prompt of one graph-mode call: the shared context, then the role's part.

    Parameters
    ----------
    role : "affirmative", "revise", "negative" or "judge"
    metadata : the delimited metadata block; evidence : Meta Fusion's block ("" for MDM-only)
    own, other : the graphs under debate as text (the Judge: A and B)
    disagreements : the Judge's list, one per line
    judge_rule : "criteria" or "overall"
    with_reason : edges carry a reason field

    Raises
    ------
    KeyError on an unknown role or rule.
    """
    step, fields = _VERDICT[judge_rule]
    evidence = "\n" + evidence if evidence else ""
    return (
        _GRAPH_CONTEXT.format(metadata=metadata, evidence=evidence)
        + "\n"
        + _GRAPH_ROLES[role].format(
            principles=GRAPH_PRINCIPLES,
            own=own,
            other=other,
            disagreements=disagreements,
            edges=_EDGES if with_reason else _EDGES_BARE,
            verdict_step=step,
            verdict_fields=fields,
        )
    )


CODER_SYSTEM = (
    "You are the Causal Coding Executor of MAC. You write, run and debug Python that applies a chosen "
    "causal discovery algorithm to data. Reply with one JSON object in the output format given."
)

CODER_TEMPLATE = """\
# Role
Causal Coding Executor: you turn the algorithm the debate chose into a working causal-learn script.

# Goal
Run {algorithm} on the full data and save the graph it returns, unchanged, with the name of its encoding.

# Data
numpy.load('data.npy') gives X, shape ({n}, {d}), float; columns in order {columns}; {data_type}.

# Algorithm
{algorithm} with parameters {params}. Call it as below (these lines carry the pool's bounds):
{usage}

# Procedure
1. Load X.
2. Call the algorithm exactly as shown, with causal-learn (import causallearn).
3. Save the matrix M the library returns with numpy.save('adjacency.npy', M), unchanged.
4. Write the name of M's encoding to 'encoding.txt'. Encodings:
{encodings}

# Rules
Anything else (other values, a wrong shape, no encoding.txt) is rejected. No network. Write only \
adjacency.npy and encoding.txt, in the current directory.

# Output format
One JSON object: "reason" first (what the script does, in a sentence or two), then "code": the complete \
script."""

CODER_RETRY_TEMPLATE = """\
# Execution result
The script failed:
{error}

# Procedure
Debug it: find the cause in the error, fix it, and reply with the complete corrected script in the same \
output format ("reason" first: the cause and the fix)."""
