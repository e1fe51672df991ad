"""LCE pieces that need no LLM: splice indices, ΔS, canonical indices, the Correct
fallback, and the bidirectional search on hand-built graphs."""

import networkx as nx
import pytest

from agentcausal.attribution.dcfa.correct import normalise_correction
from agentcausal.attribution.dcfa.lce import canonical_index, splice
from agentcausal.attribution.dcfa.search import CandidateScore, bidirectional_search, delta_s
from agentcausal.traces.model import Step


def _steps(n):
    return [Step(index=i, agent=f"A{i}", role="r", content=f"o{i}") for i in range(n)]


# ------------------------------------------------------------------ splice
@pytest.mark.parametrize(
    "i, expected",
    [
        (-1, ["o0", "o1", "o2", "o3"]),
        (0, ["c0", "o1", "o2", "o3"]),
        (2, ["c0", "c1", "c2", "o3"]),
        (3, ["c0", "c1", "c2", "c3"]),
    ],
)
def test_splice_takes_corrected_through_i_and_original_after(i, expected):
    out = splice(_steps(4), ["c0", "c1", "c2", "c3"], i)
    assert [s.content for s in out] == expected
    assert [s.index for s in out] == [0, 1, 2, 3]
    assert [s.agent for s in out] == ["A0", "A1", "A2", "A3"]


def test_splice_leaves_original_unchanged():
    orig = _steps(3)
    splice(orig, ["c0", "c1", "c2"], 2)
    assert [s.content for s in orig] == ["o0", "o1", "o2"]


@pytest.mark.parametrize("i", [-2, 4])
def test_splice_rejects_index_out_of_range(i):
    with pytest.raises(ValueError, match="outside -1..3"):
        splice(_steps(4), ["c"] * 4, i)


def test_splice_rejects_length_mismatch():
    with pytest.raises(ValueError, match="3 steps, original has 4"):
        splice(_steps(4), ["c"] * 3, 0)


# ------------------------------------------------------------------ ΔS
def test_delta_s_is_difference_with_previous_step():
    scores = {-1: 0.2, 0: 0.5, 1: 0.45, 2: 0.9}
    assert delta_s(scores, 0) == pytest.approx(0.3)
    assert delta_s(scores, 1) == pytest.approx(-0.05)
    assert delta_s(scores, 2) == pytest.approx(0.45)


def test_delta_s_needs_both_scores():
    with pytest.raises(KeyError):
        delta_s({0: 0.5}, 0)  # S(-1) missing
    with pytest.raises(KeyError):
        delta_s({-1: 0.5, 0: 0.1}, 2)


def test_canonical_index_skips_unchanged_steps():
    changed = (1, 4)
    assert [canonical_index(changed, i) for i in range(-1, 6)] == [-1, -1, 1, 1, 1, 4, 4]
    assert canonical_index((), 5) == -1


# ------------------------------------------------------------------ Correct fallback
def test_correction_empty_string_and_copies_mean_unchanged():
    c = normalise_correction(["a", "b", "c"], [(0, ""), (1, " b "), (2, "C")])
    assert c.contents == ("a", "b", "C") and c.changed == (2,) and c.fallback is None and c.missing == ()


def test_correction_skipped_step_shifts_nothing():
    # the reply skips step 1: step 2's correction stays at step 2 (matched by number, not position)
    c = normalise_correction(["a", "b", "c", "d"], [(0, "A"), (2, "C"), (3, "")])
    assert c.contents == ("A", "b", "C", "d") and c.changed == (0, 2) and c.missing == (1,)


def test_correction_ignores_repeated_and_out_of_range_entries():
    c = normalise_correction(["a", "b"], [(1, "B"), (1, "Z"), (5, "X"), (-1, "Y")])
    assert c.contents == ("a", "B") and c.fallback == "ignored 3 entries (out of range or repeated)"


def test_correction_unparseable_corrects_nothing():
    c = normalise_correction(["a", "b"], None)
    assert c.contents == ("a", "b") and c.changed == () and c.fallback == "unparseable"


def test_correction_caps_step_length():
    c = normalise_correction(["a"], [(0, "x" * 500)], max_chars=40)
    assert c.contents == ("x" * 40,) and c.truncated == (0,)


def test_long_step_echoed_verbatim_is_unchanged():
    # a 500-character step copied back is not "changed", even though the cap would cut it
    long = "y" * 500
    c = normalise_correction(["a", long], [(0, ""), (1, long + "\n")], max_chars=300)
    assert c.changed == () and c.contents == ("a", long) and c.truncated == ()


# ------------------------------------------------------------------ search on hand-built graphs
class Recorder:
    """An evaluate() over fixed S(i) (one S per step, ΔS(i) = S(i) - S(i-1)) that records every request."""

    def __init__(self, scores, errors=()):
        self.scores = scores
        self.errors = set(errors)
        self.requests = []

    def __call__(self, idx):
        self.requests.append(sorted(idx))
        out = {}
        for i in idx:
            if i in self.errors:
                out[i] = CandidateScore(None, None, None, None, "unreadable")
            else:
                s, prev = self.scores[i], self.scores.get(i - 1, 0.0)
                out[i] = CandidateScore(s, prev, s - prev)
        return out

    @property
    def evaluated(self):
        return [i for r in self.requests for i in r]


def test_search_graph_without_edges_evaluates_nothing():
    g = nx.DiGraph()
    g.add_nodes_from(range(5))
    ev = Recorder({})
    r = bidirectional_search(g, 2, ev, max_iterations=3)
    assert ev.requests == []
    assert r.visited == (2,) and r.path == ()
    assert r.stopped == {"forward": "no_neighbours", "backward": "no_neighbours"}


def test_search_hypothesis_missing_from_graph_has_no_neighbours():
    r = bidirectional_search(nx.DiGraph([(0, 1)]), 4, Recorder({}), max_iterations=3)
    assert r.visited == (4,)


def test_search_goes_to_causes_first_then_to_effects():
    # 0 -> 2 -> 4, 1 -> 2 -> 3 ; hypothesis 2
    g = nx.DiGraph([(0, 2), (1, 2), (2, 3), (2, 4)])
    s = {-1: 0.0, 0: 0.3, 1: 0.2, 2: 0.5, 3: 0.6, 4: 0.9}
    ev = Recorder(s)
    r = bidirectional_search(g, 2, ev, max_iterations=5)
    # backward (causes) first: {0, 1}: ΔS(0)=0.3, ΔS(1)=-0.1 -> 0; 0 has no causes
    # forward (effects): {3, 4}: ΔS(3)=0.1, ΔS(4)=0.3 -> 4; 4 has no effects
    assert ev.requests == [[0, 1], [3, 4]]
    assert [(m.direction, m.pivot, m.step) for m in r.path] == [("backward", 2, 0), ("forward", 2, 4)]
    assert r.path[1].delta_s == pytest.approx(0.3) and r.path[1].s == pytest.approx(0.9)
    assert r.path[1].s_prev == pytest.approx(0.6)
    assert r.visited == (2, 0, 4)
    assert list(r.stopped) == ["backward", "forward"]
    assert [(m.step, m.accepted) for m in r.evaluated] == [(0, True), (1, False), (3, False), (4, True)]


def test_search_successors_first_is_the_papers_order():
    g = nx.DiGraph([(0, 2), (2, 3)])
    ev = Recorder({-1: 0.0, 0: 0.3, 1: 0.3, 2: 0.5, 3: 0.9})
    r = bidirectional_search(g, 2, ev, max_iterations=5, order=("forward", "backward"))
    assert ev.requests == [[3], [0]] and list(r.stopped) == ["forward", "backward"]


def test_search_only_predecessors_means_forward_stops_at_once():
    # the paper's naming (the authors' code swaps it): edges into the hypothesis are backward
    g = nx.DiGraph([(0, 3), (1, 3)])
    s = {-1: 0.0, 0: 0.4, 1: 0.5, 2: 0.5, 3: 0.5}
    r = bidirectional_search(g, 3, Recorder(s), max_iterations=3)
    assert r.stopped["forward"] == "no_neighbours"
    assert [(m.direction, m.step) for m in r.path] == [("backward", 0)]


def test_search_stops_when_no_delta_is_positive():
    g = nx.DiGraph([(1, 2), (1, 3)])
    s = {0: 0.5, 1: 0.5, 2: 0.4, 3: 0.4}
    r = bidirectional_search(g, 1, Recorder(s), max_iterations=3)
    assert r.path == () and r.visited == (1,)
    assert r.stopped["forward"] == "no_positive"


def test_search_zero_delta_is_not_a_move():
    g = nx.DiGraph([(0, 1)])
    r = bidirectional_search(g, 0, Recorder({0: 0.5, 1: 0.5}), max_iterations=3)
    assert r.path == () and r.stopped["forward"] == "no_positive"


def test_search_rounds_delta_before_it_accepts():
    # ΔS(1) = 0.0004 rounds to 0.000: not a move at 3 decimals, a move on raw floats
    g = nx.DiGraph([(0, 1)])
    s = {-1: 0.0, 0: 0.5, 1: 0.5004}
    assert bidirectional_search(g, 0, Recorder(s), max_iterations=3).path == ()
    assert [m.step for m in bidirectional_search(g, 0, Recorder(s), max_iterations=3, decimals=None).path] == [1]


def test_search_rounded_tie_goes_outward():
    # ΔS(2) = 0.5001 and ΔS(4) = 0.5004 round to one value: forward, the higher step wins the tie
    g = nx.DiGraph([(0, 2), (0, 4)])
    s = {-1: 0.0, 0: 0.0, 1: 0.0, 2: 0.5001, 3: 0.0, 4: 0.5004}
    assert bidirectional_search(g, 0, Recorder(s), max_iterations=1).path[0].step == 4
    # ties="lower" takes the lower step; raw floats take the larger ΔS
    assert bidirectional_search(g, 0, Recorder(s), max_iterations=1, ties="lower").path[0].step == 2
    s2 = {**s, 2: 0.5004, 4: 0.5001}
    assert bidirectional_search(g, 0, Recorder(s2), max_iterations=1, decimals=None).path[0].step == 2

    # backward, the lower step wins a tie
    def tied(idx):
        return {i: CandidateScore(0.4, 0.0, 0.4) for i in idx}

    assert bidirectional_search(nx.DiGraph([(2, 5), (3, 5)]), 5, tied, max_iterations=1).path[0].step == 2


def test_search_never_scores_a_step_twice():
    # 0 -> 3, 1 -> 3, 1 -> 2, 2 -> 3; hypothesis 3: causes {0, 1, 2} -> 2; causes of 2: {1}, already evaluated
    g = nx.DiGraph([(0, 3), (1, 3), (1, 2), (2, 3)])
    s = {-1: 0.0, 0: 0.0, 1: 0.2, 2: 0.9, 3: 1.0}
    ev = Recorder(s)
    r = bidirectional_search(g, 3, ev, max_iterations=5)
    assert ev.evaluated == [0, 1, 2] and len(set(ev.evaluated)) == len(ev.evaluated)
    assert r.stopped["backward"] == "all_evaluated"
    # revisit=True (Algorithm 2 keeps no set) scores step 1 again from pivot 2
    ev2 = Recorder(s)
    bidirectional_search(g, 3, ev2, max_iterations=5, revisit=True)
    assert ev2.evaluated == [0, 1, 2, 1]


def test_search_chain_stops_at_max_iterations():
    g = nx.DiGraph([(i, i + 1) for i in range(8)])
    s = {i: 0.1 * i for i in range(-1, 9)}
    r = bidirectional_search(g, 0, Recorder(s), max_iterations=5)
    assert r.visited == (0, 1, 2, 3, 4, 5) and len(r.path) == 5
    assert r.stopped["forward"] == "max_iterations"
    assert r.stopped["backward"] == "no_neighbours"


def test_search_skips_a_candidate_that_could_not_be_scored():
    g = nx.DiGraph([(0, 1), (0, 2)])
    s = {-1: 0.0, 0: 0.1, 1: 0.2, 2: 0.5}
    r = bidirectional_search(g, 0, Recorder(s, errors={1}), max_iterations=1)
    assert r.path[0].step == 2
    assert [(m.step, m.error) for m in r.evaluated] == [(1, "unreadable"), (2, None)]


def test_search_hypothesis_at_step_0_only_moves_forward():
    g = nx.DiGraph([(0, 1), (1, 2)])
    s = {-1: 0.0, 0: 0.1, 1: 0.5, 2: 0.9}
    r = bidirectional_search(g, 0, Recorder(s), max_iterations=5)
    assert r.visited == (0, 1, 2)
    assert r.stopped == {"forward": "no_neighbours", "backward": "no_neighbours"}


def test_search_hypothesis_at_last_step_only_moves_backward():
    g = nx.DiGraph([(0, 3), (1, 3), (2, 3), (0, 1)])
    s = {-1: 0.0, 0: 0.6, 1: 0.2, 2: 0.3, 3: 0.35}
    r = bidirectional_search(g, 3, Recorder(s), max_iterations=5)
    # backward from 3: ΔS(0)=0.6, ΔS(1)=-0.4, ΔS(2)=0.1 -> 0; 0 has no predecessors
    assert r.stopped["forward"] == "no_neighbours"
    assert r.visited == (3, 0)


def test_search_zero_iterations_evaluates_nothing():
    ev = Recorder({})
    r = bidirectional_search(nx.DiGraph([(0, 1)]), 0, ev, max_iterations=0)
    assert ev.requests == [] and r.stopped["forward"] == "max_iterations"


def test_search_rejects_negative_iterations_and_bad_orders():
    with pytest.raises(ValueError, match="max_iterations"):
        bidirectional_search(nx.DiGraph(), 0, Recorder({}), max_iterations=-1)
    with pytest.raises(ValueError, match="order"):
        bidirectional_search(nx.DiGraph(), 0, Recorder({}), max_iterations=1, order=("forward", "forward"))
