"""Rule-based replies for the fake OpenAI server (TEST DOUBLE) in the tests and the benchmarks.

:class:`BenchResponder` answers every structured request by the name of its
reply schema (``response_format.json_schema.name``): each attribution reply
model (the three Who&When baselines and every DCFA stage) has a handler that
reads what it needs from the prompt and the schema and returns valid JSON;
any other schema (MAC's replies, a model added later) gets a generic instance
built from the JSON schema by :func:`instance_from_schema`.

The simulated "model" is a deterministic, noisy oracle. Each trace gets a
hidden culprit step ``k* = h(question, n) mod n`` (``h`` a sha256, ``n`` the
number of steps; the trace's real label is never seen), and the replies lean
towards it:

* All-at-Once names ``k*`` on about 60 % of traces, another step otherwise;
* Step-by-Step sees only the steps so far, so it says "decisive" with a
  fixed chance per step (15 %), by a hash of the step;
* Binary-Search picks the part holding ``k*`` 80 % of the time;
* A2P answers as All-at-Once, with its abduction, action and prediction;
  ECHO's scan lists ``k*`` among MDI's steps (in a hashed order) and each
  panel analyst votes ``k*`` 70 % of the time, with a hashed confidence;
* DCFA: MDI lists ``k*`` and 1 to 3 other steps, CGC draws forward edges
  between listed steps and their neighbours, HG names ``k*`` or a listed step,
  Correct rewrites the listed steps, **Simulation** answers the correct answer
  once the revised prefix covers ``k*`` and a wrong answer (one of a few
  variants, chosen by the step) before it, DED picks ``k*`` when it is a
  candidate. The correct answer for Simulation comes from the Correct prompt
  of the same trace, which always runs first (kept in memory by question;
  see :class:`BenchResponder` for how partial prompts find their trace).

So the LCE search does real work: ΔS is about 1 at ``k*`` and varies by step
(cosines of the fake server's pseudo-random embeddings) elsewhere, so some
moves are accepted and some directions stop early. Every choice is a hash of
the prompt, so a run repeats exactly; accuracy against the labels is chance
level and is never reported from these runs.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from typing import Any

from agentcausal_fakes.evidence import add_evidence, asks_evidence

__all__ = ["BenchResponder", "instance_from_schema", "schema_name", "HANDLED_SCHEMAS"]

_QUESTION = re.compile(r"<question>(.*?)</question>", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)
_STEP_TAG = re.compile(r'<step n="(\d+)">\n(?:Step \d+ \| )?([^:\n]*)')
_BLOCK = re.compile(r'<step n="(\d+)">\n(.*?)\n</step>', re.S)
_REVISED = re.compile(r"Steps 0 to (\d+) above are revised")
_STEP_ASKED = re.compile(r"(?:Is step|most recent step \(step) (\d+)[ ,]|most recent step \((\d+)\)")
_UPPER = re.compile(
    r"upper half \(from step (\d+) to step (\d+)\) or in the lower half \(from step (\d+) to step (\d+)\)"
)
_SPEAKER = re.compile(r"^([^:\n<]+): ", re.M)
_PARTS = re.compile(r"first part \(steps (\d+) to (\d+)\) or the second part \(steps (\d+) to (\d+)\)")


def _h(*parts: object) -> int:
    """A stable 64-bit hash of the parts."""
    return int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:8], "little")


def schema_name(body: dict[str, Any]) -> str | None:
    """The reply schema's name of a chat request, or None (plain chat or ``json_object`` mode)."""
    rf = body.get("response_format") or {}
    return (rf.get("json_schema") or {}).get("name")


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    return ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}


def _user(body: dict[str, Any]) -> str:
    """The first user message (the prompt; repair requests repeat it)."""
    return next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"), "")


# ------------------------------------------------------------------ generic instances
def instance_from_schema(schema: dict[str, Any], *, seed: int = 0, root: dict[str, Any] | None = None) -> Any:
    """A small valid instance of a JSON schema (the subset pydantic emits).

    Handles ``$ref``/``$defs``, ``anyOf`` (takes the first non-null branch),
    ``enum``/``const``, objects (every property, required or not), arrays
    (``minItems`` items, at least one when allowed), strings (``minLength`` /
    ``maxLength``), integers and numbers (``minimum`` / ``maximum``), booleans and null.

    Parameters
    ----------
    schema : dict, a JSON schema
    seed : int, picks among enum values and numbers deterministically
    root : dict, the schema holding ``$defs`` (default ``schema``)

    Returns
    -------
    A JSON-serialisable value.

    Examples
    --------
    >>> instance_from_schema({"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}})
    {'n': 3}
    """
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return instance_from_schema(root.get("$defs", {})[name], seed=seed, root=root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    if "anyOf" in schema or "oneOf" in schema:
        branches = schema.get("anyOf") or schema.get("oneOf")
        real = [b for b in branches if b.get("type") != "null"] or branches
        return instance_from_schema(real[0], seed=seed, root=root)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next((t for t in typ if t != "null"), "null")
    if typ == "object" or "properties" in schema:
        return {
            k: instance_from_schema(v, seed=_h(seed, k), root=root) for k, v in schema.get("properties", {}).items()
        }
    if typ == "array":
        lo, hi = schema.get("minItems", 0), schema.get("maxItems")
        k = max(lo, 1 if hi is None or hi >= 1 else 0)
        return [instance_from_schema(schema.get("items", {}), seed=_h(seed, i), root=root) for i in range(k)]
    if typ == "string":
        text = f"value {seed % 97}"
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        text = text.ljust(lo, "x")
        return text[:hi] if hi is not None else text
    if typ in ("integer", "number"):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if lo is not None and hi is not None:
            v = lo + seed % (int(hi - lo) + 1)
        else:
            v = lo if lo is not None else (hi if hi is not None else 0)
        return int(v) if typ == "integer" else float(v)
    if typ == "boolean":
        return bool(seed % 2)
    return None


# ------------------------------------------------------------------ the oracle
class BenchResponder:
    """Deterministic replies for every reply model, leaning towards a hidden culprit per trace.

    The culprit of a trace is ``h(question, n) mod n``. Prompts that show the
    whole trace give ``n`` (the number of ``<step>`` blocks); the responder
    remembers, for every step block it has seen in such a prompt, the ``n`` of
    its trace, and per question the correct answer once a prompt has shown
    it. So prompts that show only some steps (DED, Binary-Search after its
    first call) or hide the answer (Simulation) stay consistent with the same
    culprit, whatever order concurrent traces arrive in. A request whose reply
    schema asks for ``evidence`` (``quote_evidence``, ``attribute --evidence``) gets a
    verbatim slice of the step its reply names (:func:`agentcausal_fakes.evidence.add_evidence`).

    Parameters
    ----------
    p_all_at_once : float, share of traces where All-at-Once names the culprit
    p_binary : float, chance that Binary-Search picks the culprit's part
    hazard : float, chance per step that Step-by-Step says "decisive" (it
        cannot see the whole trace, so it is a geometric guesser)

    Attributes
    ----------
    counts : dict schema name -> requests answered (thread-safe)
    """

    def __init__(self, *, p_all_at_once: float = 0.6, p_binary: float = 0.8, hazard: float = 0.15) -> None:
        self.p_all_at_once, self.p_binary, self.hazard = p_all_at_once, p_binary, hazard
        self.counts: dict[str, int] = {}
        self._truths: dict[str, str] = {}
        self._n_of_block: dict[int, int] = {}
        self._echo_culprit: dict[str, int] = {}
        self._segment_n: dict[str, int] = {}
        self._lock = threading.Lock()
        self._handlers: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
            "AllAtOnceReply": self._all_at_once,
            "StepVerdict": self._step_verdict,
            "StepErrorVerdict": self._step_verdict,
            "PaperHalfChoice": self._half_choice,
            "HalfChoice": self._half_choice,
            "DeviationsAndGraph": self._gca_joint,
            "DeviationsAndLinks": self._gca_joint,
            "CausalListsReply": self._cgc,
            "DeviationsReply": self._mdi,
            "EdgesReply": self._cgc,
            "HypothesisReply": self._hypothesis,
            "CorrectedTraceReply": self._correct,
            "SimulatedOutcome": self._simulation,
            "PaperSimulatedOutcome": self._simulation,
            "RootCauseOutcome": self._simulation,
            "JudgeReply": self._judge,
            "DecisionReply": self._decision,
            "A2PReply": self._a2p,
            "EchoScan": self._echo_scan,
            "EchoPanelReply": self._echo_panel,
        }

    # ------------------------------------------------------------- helpers
    @staticmethod
    def _question(u: str) -> str:
        m = _QUESTION.search(u)
        return m.group(1) if m else u[:200]

    @staticmethod
    def _blocks(u: str) -> list[tuple[int, str]]:
        return [(int(i), b) for i, b in _BLOCK.findall(u)]

    def _register(self, u: str, n: int | None = None) -> int:
        """Remember ``n`` (default: the step blocks shown) for every step block, and the answer; returns n."""
        q = self._question(u)
        blocks = self._blocks(u)
        n = n or (max(i for i, _ in blocks) + 1 if blocks else 1)
        m = _ANSWER.search(u)
        with self._lock:
            for i, b in blocks:
                self._n_of_block.setdefault(_h(q, i, b), n)
            if m:
                self._truths.setdefault(q, m.group(1))
        return n

    def _lookup(self, u: str) -> int | None:
        """``n`` of the trace whose step blocks this prompt shows, if one was registered."""
        q = self._question(u)
        with self._lock:
            for i, b in self._blocks(u):
                n = self._n_of_block.get(_h(q, i, b))
                if n:
                    return n
        return None

    def _culprit(self, u: str, n: int) -> int:
        return _h("culprit", self._question(u), n) % max(n, 1)

    def _flagged(self, u: str, n: int) -> list[int]:
        """MDI's deviations: the culprit plus 1 to 3 other steps, deterministic per trace."""
        q = self._question(u)
        extra = {_h("dev", q, n, j) % n for j in range(1 + _h("ndev", q, n) % 3)}
        return sorted({self._culprit(u, n), *extra})

    @staticmethod
    def _agents(u: str) -> dict[int, str]:
        return {int(i): a.strip() for i, a in _STEP_TAG.findall(u)}

    # ------------------------------------------------------------- baselines
    def _all_at_once(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        step_schema = _schema(body).get("properties", {}).get("step", {})
        n = self._register(u, int(step_schema["maximum"]) + 1 if "maximum" in step_schema else None)
        q = self._question(u)
        k = self._culprit(u, n)
        if _h("aao", q, n) % 1000 >= self.p_all_at_once * 1000:
            k = _h("aao-miss", q, n) % n
        agent = self._agents(u).get(k) or None
        if agent is None:  # ``paper``: "speaker: content" lines without step numbers, the agent free text
            speakers = _SPEAKER.findall(u.split("<trace>", 1)[-1].split("</trace>", 1)[0])
            agent = (speakers[k] if len(speakers) == n else speakers[0] if speakers else "unknown").strip()
        choices = next(
            (
                a["enum"]
                for a in (lambda p: p.get("anyOf", [p]))(_schema(body).get("properties", {}).get("agent", {}))
                if "enum" in a
            ),
            None,
        )
        if choices and agent not in choices:  # the schema lists the trace's own agents
            agent = choices[0]
        return {"reason": f"step {k} took a wrong turn", "agent": agent, "step": k}

    def _step_verdict(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        m = _STEP_ASKED.search(u)
        i = int(m.group(1) or m.group(2)) if m else 0
        decisive = _h("sbs", self._question(u), i) % 1000 < self.hazard * 1000
        if schema_name(body) == "StepErrorVerdict":
            return {"error": decisive, "reason": f"step {i} {'has' if decisive else 'has no'} derailing error"}
        return {"reason": f"step {i} {'is' if decisive else 'is not'} the decisive error", "decisive": decisive}

    def _half_choice(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        up = _UPPER.search(u)
        if up:  # ``paper``: upper/lower half; the first call's segment is the whole trace
            a_lo, a_hi, b_lo, b_hi = map(int, up.groups())
            q = self._question(u)
            with self._lock:
                n = self._segment_n.setdefault(q, b_hi + 1)
            right = "upper half" if self._culprit(u, n) <= a_hi else "lower half"
            wrong = "lower half" if right == "upper half" else "upper half"
            half = right if _h("bs", q, n, a_lo, b_hi) % 1000 < self.p_binary * 1000 else wrong
            return {"half": half, "reason": f"the error is in the {half}"}
        m = _PARTS.search(u)
        if not m:
            forced = "undetermined" not in json.dumps(_schema(body))
            return {"reason": "cannot tell", "part": "first" if forced else "undetermined"}
        a_lo, a_hi, b_lo, b_hi = map(int, m.groups())
        n = self._lookup(u) or self._register(u)  # the first call shows the whole trace
        q = self._question(u)
        right = "first" if self._culprit(u, n) <= a_hi else "second"
        wrong = "second" if right == "first" else "first"
        part = right if _h("bs", q, n, a_lo, b_hi) % 1000 < self.p_binary * 1000 else wrong
        return {"reason": f"the error is in the {part} part", "part": part}

    def _a2p(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        verdict = self._all_at_once(body, u)
        return {
            "abduction": f"a wrong assumption at step {verdict['step']}",
            "action": "check the value first",
            "prediction": "the next agents use the checked value",
            "reverses_failure": True,
            **verdict,
        }

    def _echo_scan(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        n = self._register(u)
        cap = _schema(body).get("properties", {}).get("candidates", {}).get("maxItems") or n
        with self._lock:
            self._echo_culprit[self._question(u)] = self._culprit(u, n)
        steps = list(dict.fromkeys([self._culprit(u, n), *self._flagged(u, n)]))[:cap]
        steps.sort(key=lambda s: _h("echo-rank", self._question(u), s))  # the culprit is not always first
        return {
            "overview": "the run drifted from the task",
            "candidates": [{"step": s, "reason": f"step {s} looks unverified"} for s in steps],
        }

    def _echo_panel(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        schema = _schema(body)
        q = self._question(u)
        with self._lock:
            k = self._echo_culprit.get(q)
        out = {}
        for name, prop in schema.get("properties", {}).items():
            vote = schema.get("$defs", {}).get(prop.get("$ref", "").rsplit("/", 1)[-1], {})
            st = vote.get("properties", {}).get("step", {})
            cands = [
                c for b in st.get("anyOf", [st]) for c in (b.get("enum") or ([b["const"]] if "const" in b else []))
            ]
            cands = cands or [0]  # a single candidate is a ``const``
            pick = k if k in cands and _h("echo-vote", q, name) % 10 < 7 else cands[_h("echo", q, name) % len(cands)]
            out[name] = {
                "hypothesis": f"step {pick} starts the failure",
                "evidence": "its value is never checked",
                "step": pick,
                "agent": self._agents(u).get(pick),
                "confidence": round(0.3 + (_h("conf", q, name) % 70) / 100, 2),
            }
        return out

    # ------------------------------------------------------------- DCFA: GCA
    def _edges(self, u: str, n: int) -> list[dict[str, int]]:
        q = self._question(u)
        flagged = self._flagged(u, n)
        edges: set[tuple[int, int]] = set(zip(flagged, flagged[1:]))
        for s in flagged:
            for j in range(2):
                t = s + 1 + _h("edge", q, s, j) % 3
                if t < n:
                    edges.add((s, t))
                p = s - 1 - _h("back", q, s, j) % 3
                if p >= 0:
                    edges.add((p, s))
        return [{"source": p, "target": t} for p, t in sorted(edges)[:10]]

    def _deviations(self, u: str, n: int) -> list[dict[str, Any]]:
        return [{"step": s, "reason": f"step {s} is unverified"} for s in self._flagged(u, n)][:5]

    @staticmethod
    def _judged(body: dict[str, Any], edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Edges with the CGC judgements when the schema asks for them (``paper`` prompts)."""
        if "JudgedEdge" not in json.dumps(_schema(body)):
            return edges
        return [
            {**e, "reason": "it uses that value", "temporal": True, "necessary": True, "sufficient": True}
            for e in edges
        ]

    @staticmethod
    def _lists(edges: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The edges as per-step cause/effect lists (``cgc="code"`` replies)."""
        steps: dict[int, dict[str, Any]] = {}
        for e in edges:
            steps.setdefault(e["target"], {"step": e["target"], "causes": [], "effects": []})["causes"].append(
                e["source"]
            )
            steps.setdefault(e["source"], {"step": e["source"], "causes": [], "effects": []})["effects"].append(
                e["target"]
            )
        return [steps[k] for k in sorted(steps)]

    def _graph(self, body: dict[str, Any], edges: list[dict[str, Any]]) -> dict[str, Any]:
        return (
            {"steps": self._lists(edges)}
            if schema_name(body) in ("CausalListsReply", "DeviationsAndLinks")
            else {"edges": self._judged(body, edges)}
        )

    def _gca_joint(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        n = self._register(u)
        return {"deviations": self._deviations(u, n), **self._graph(body, self._edges(u, n))}

    def _mdi(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        n = self._register(u)
        return {"deviations": self._deviations(u, n)}

    def _cgc(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        return self._graph(body, self._edges(u, self._register(u)))

    def _hypothesis(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        step_schema = _schema(body).get("properties", {}).get("step", {})
        n = self._register(u, int(step_schema["maximum"]) + 1 if "maximum" in step_schema else None)
        flagged = self._flagged(u, n)
        q = self._question(u)
        k = self._culprit(u, n) if _h("hg", q, n) % 2 == 0 else flagged[_h("hg-pick", q, n) % len(flagged)]
        return {"step": k, "reason": f"step {k} starts the wrong chain"}

    # ------------------------------------------------------------- DCFA: LCE
    def _correct(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        steps_schema = _schema(body).get("properties", {}).get("steps", {})
        n = self._register(u, steps_schema.get("maxItems"))
        flagged = set(self._flagged(u, n))
        return {"steps": [{"step": i, "content": f"corrected step {i}" if i in flagged else ""} for i in range(n)]}

    def _simulation(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        m = _REVISED.search(u)
        blocks = self._blocks(u)  # the whole (partly corrected) trace is shown
        # no "Steps 0 to i" note (``simulation="code"``): the last step showing Correct's content
        i = int(m.group(1)) if m else max((j for j, b in blocks if "corrected step" in b), default=-1)
        n = max(j for j, _ in blocks) + 1 if blocks else 1
        q = self._question(u)
        with self._lock:
            truth = self._truths.get(q)
        out = truth if truth is not None and i >= self._culprit(u, n) else f"wrong answer {_h('sim', q, n, i) % 4}"
        if schema_name(body) == "RootCauseOutcome":
            return {"reason": f"the corrections through step {i} carry on", "answer": out}
        return {"outcome": out}

    def _judge(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        m = re.search(r"<data>(.*?)</data>", u, re.S)
        outcome = m.group(1).strip() if m else ""
        with self._lock:
            truth = self._truths.get(self._question(u))
        return {"probability": 0.9 if truth is not None and outcome == truth else 0.1}

    def _decision(self, body: dict[str, Any], u: str) -> dict[str, Any]:
        cands = (
            _schema(body).get("properties", {}).get("step", {}).get("enum")
            or [int(x) for x, _ in _STEP_TAG.findall(u)]
            or [0]
        )
        q = self._question(u)
        n = self._lookup(u)
        k = self._culprit(u, n) if n else None
        pick = k if k in cands else cands[_h("ded", q, tuple(cands)) % len(cands)]
        return {"step": pick, "reason": f"correcting step {pick} fixes the answer"}

    # ------------------------------------------------------------- entry point
    def __call__(self, body: dict[str, Any]) -> str:
        """The reply text of one chat request (the fake server's ``responder``)."""
        name = schema_name(body) or "plain"
        with self._lock:
            self.counts[name] = self.counts.get(name, 0) + 1
        u = _user(body)
        handler = self._handlers.get(name)
        if handler is not None:
            reply = handler(body, u)
            if asks_evidence(body) and "evidence" not in reply:  # quote_evidence / --evidence: a verbatim quote
                return add_evidence(body, json.dumps(reply))
            return json.dumps(reply)
        schema = _schema(body)
        if schema:
            return json.dumps(instance_from_schema(schema, seed=_h(name, u)))
        return "ok"


HANDLED_SCHEMAS = tuple(BenchResponder()._handlers)
