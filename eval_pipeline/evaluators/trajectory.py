"""Trajectory match with agentevals' semantics, as an evaluator in our calling convention.

Trajectories are OpenAI-format message lists (or ``{"messages": [...]}`` /
``{"trajectory": [...]}``); tool-call arguments may be JSON strings or dicts; LangChain-style
``{"name", "args"}`` tool calls and ``ai``/``human`` roles are accepted too.

Modes (as ``agentevals.trajectory.match.create_trajectory_match_evaluator``):
- ``strict``: same number of messages, same roles in order, and in each message the same
  tool calls (any order within the message) with matching arguments;
- ``unordered``: the same tool calls overall, in any order;
- ``subset``: every tool call of the output is in the reference;
- ``superset``: every tool call of the reference is in the output.
Argument modes compare ``output`` args with ``reference`` args: ``exact`` (equal), ``ignore``,
``subset`` (output ⊆ reference) or ``superset`` (reference ⊆ output); overrides per tool name
take a mode, a list of (dotted) keys that must be equal, or a function.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from eval_pipeline.evaluators.declare import Evaluator, Score, evaluator
from eval_pipeline.evaluators.handoffs import handoffs_made, is_handoff
from eval_pipeline.evaluators.registry import register

TrajectoryMode = Literal["strict", "unordered", "subset", "superset"]
ArgsMode = Literal["exact", "ignore", "subset", "superset"]
ArgsMatcher = Callable[[dict, dict], bool]
ROLES = {"ai": "assistant", "human": "user", "system": "system", "tool": "tool"}


def normalize_messages(value: Any, *, handoffs: bool = True) -> list[dict[str, Any]]:
    """A trajectory as OpenAI-style messages whose tool calls are ``{name, args}`` dicts;
    without ``handoffs``, the handoff calls (evaluators/handoffs.py), the tool results answering
    them and the messages left with nothing to say are dropped."""
    return _normalized(value, None if handoffs else is_handoff)


def _normalized(value: Any, dropped: Callable[[str], bool] | None) -> list[dict[str, Any]]:
    """``normalize_messages``, leaving out the calls whose name ``dropped`` says (and what
    answers them)."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        if "role" in value:
            value = [value]
        elif "messages" in value or "trajectory" in value:
            value = value.get("messages", value.get("trajectory"))
        else:
            raise ValueError("a trajectory dict needs a 'messages' or 'trajectory' key")
    return [_message(m) for m in (value if dropped is None else _without(value, dropped))]


def _without(messages: Sequence[Mapping[str, Any]], dropped: Callable[[str], bool]
             ) -> list[Mapping[str, Any]]:  # fmt: skip
    handed: set[Any] = set()
    kept: list[Mapping[str, Any]] = []
    for message in messages:
        if message.get("tool_call_id") in handed:
            continue
        calls = message.get("tool_calls") or []
        handoff = [c for c in calls if dropped(_call(c)["name"])]
        if not handoff:
            kept.append(message)
            continue
        handed |= {c.get("id") for c in handoff if c.get("id")}
        rest = [c for c in calls if c not in handoff]
        if rest or (message.get("content") and not str(message["content"]).startswith(
                "Transferring back")):  # fmt: skip
            kept.append({**message, "tool_calls": rest or None})
    return kept


def _left_out(output: Any, reference: Any) -> Callable[[str], bool]:
    """What ``handoffs: false`` leaves out of both sides: the handoffs (by name, or marked
    so in the output's ``tool_calls``: a team's own ``Command(goto=…)`` tool) that the
    reference does not list; one it lists is a route the team expects, compared."""
    marked = set(handoffs_made(output))

    def handoff(name: str) -> bool:
        return is_handoff(name) or name in marked

    listed = {c["name"] for m in _normalized(reference, None) for c in m["tool_calls"] or []
              if handoff(c["name"])}  # fmt: skip
    return lambda name: handoff(name) and name not in listed


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = ROLES.get(str(message.get("role") or message.get("type")), message.get("role"))
    calls = message.get("tool_calls")
    return {
        "role": role,
        "content": message.get("content") or "",
        "tool_calls": [_call(c) for c in calls] if calls else None,  # [] = no tool calls
    }


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    if "function" in call:
        name, args = call["function"]["name"], call["function"].get("arguments", {})
    else:
        name, args = call["name"], call.get("args", call.get("arguments", {}))
    if isinstance(args, str):
        args = json.loads(args) if args.strip() else {}
    return {"name": name, "args": args}


def _nested(d: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(d, dict):
            return None
        d = d.get(part)
        if d is None:
            return None
    return d


def args_matcher(mode: ArgsMode) -> ArgsMatcher:
    if mode == "exact":
        return lambda out, ref: out == ref
    if mode == "subset":
        return lambda out, ref: all(k in ref and ref[k] == v for k, v in out.items())
    if mode == "superset":
        return lambda out, ref: all(k in out and out[k] == v for k, v in ref.items())
    if mode == "ignore":
        return lambda out, ref: True
    raise ValueError(f"unknown tool_args_match_mode {mode!r}")


def _matcher_for(name: str, mode: ArgsMode, overrides: Mapping[str, Any] | None) -> ArgsMatcher:
    override = (overrides or {}).get(name)
    if not override:
        return args_matcher(mode)
    if isinstance(override, str):
        return args_matcher(override)  # type: ignore[arg-type]
    if callable(override):
        return override
    if isinstance(override, list):
        return lambda out, ref: all(_nested(out, k) == _nested(ref, k) for k in override)
    raise ValueError(f"invalid tool_args_match_overrides entry for {name!r}: {override!r}")


def _covers(
    outputs: Sequence[dict], references: Sequence[dict], mode: ArgsMode, overrides
) -> tuple[bool, str]:
    """Is every tool call of ``references`` matched by a distinct call of ``outputs``?"""
    out_calls = [c for m in outputs for c in m["tool_calls"] or []]
    ref_calls = [c for m in references for c in m["tool_calls"] or []]
    used: set[int] = set()
    for ref in ref_calls:
        matcher = _matcher_for(ref["name"], mode, overrides)
        hit = next(
            (
                i
                for i, out in enumerate(out_calls)
                if i not in used
                and out["name"] == ref["name"]
                and matcher(out["args"], ref["args"])
            ),
            None,
        )
        if hit is None:
            return False, f"no matching call for {ref['name']}({json.dumps(ref['args'])})"
        used.add(hit)
    return True, ""


def _strict(outputs, references, mode: ArgsMode, overrides) -> tuple[bool, str]:
    if len(outputs) != len(references):
        return False, f"{len(outputs)} messages, reference has {len(references)}"
    for step, (out, ref) in enumerate(zip(outputs, references, strict=True)):
        if out["role"] != ref["role"]:
            return False, f"message {step}: role {out['role']}, reference {ref['role']}"
        if (out["tool_calls"] is None) != (ref["tool_calls"] is None):
            return False, f"message {step}: tool calls on one side only"
        if out["tool_calls"] is None:
            continue
        if len(out["tool_calls"]) != len(ref["tool_calls"]):
            return False, (
                f"message {step}: {len(out['tool_calls'])} tool calls, reference "
                f"{len(ref['tool_calls'])}"
            )
        ok, why = strict_calls_match(out["tool_calls"], ref["tool_calls"], mode, overrides)
        if not ok:
            return False, f"message {step}: {why}"
    return True, ""


def strict_calls_match(
    out_calls: Sequence[dict], ref_calls: Sequence[dict], mode: ArgsMode, overrides=None
) -> tuple[bool, str]:
    """agentevals' strict rule: each output call must match a distinct reference call."""
    seen = [False] * len(ref_calls)
    for out in out_calls:
        matcher = _matcher_for(out["name"], mode, overrides)
        hit = next(
            (
                i
                for i, ref in enumerate(ref_calls)
                if not seen[i] and ref["name"] == out["name"] and matcher(out["args"], ref["args"])
            ),
            None,
        )
        if hit is None:
            return False, f"call {out['name']}({json.dumps(out['args'])}) not in the reference"
        seen[hit] = True
    return True, ""


@register
def trajectory_match(
    *,
    mode: TrajectoryMode = "strict",
    tool_args_match_mode: ArgsMode = "exact",
    tool_args_match_overrides: Mapping[str, Any] | None = None,
    handoffs: bool = True,
) -> Evaluator:
    """An item evaluator: 1.0 if the output trajectory matches the reference, else 0.0.
    The output is ``output["messages"]`` (or the output itself), the reference
    ``expected_output["trajectory"]`` / ``["messages"]`` (or the expected output itself).
    ``handoffs: false`` compares both without the handoffs to other agents the reference
    does not list (a handoff it lists is compared: the route is expected)."""
    if mode not in ("strict", "unordered", "subset", "superset"):
        raise ValueError(f"unknown trajectory match mode {mode!r}")
    args_matcher(tool_args_match_mode)  # validates the mode early
    params = {"mode": mode, "tool_args_match_mode": tool_args_match_mode,
              "tool_args_match_overrides": tool_args_match_overrides,
              **({} if handoffs else {"handoffs": False})}  # fmt: skip

    @evaluator(name=f"trajectory_{mode}_match", params=params, data_type="BOOLEAN",
               reads=("expected_output.trajectory|expected_output.messages",))  # fmt: skip
    def match(*, output, expected_output=None, **kwargs) -> Score:
        dropped = None if handoffs else _left_out(output, expected_output)
        out, ref = _normalized(output, dropped), _normalized(expected_output, dropped)
        args = (tool_args_match_mode, tool_args_match_overrides)
        if mode == "strict":
            ok, why = _strict(out, ref, *args)
        elif mode == "superset":
            ok, why = _covers(out, ref, *args)
        elif mode == "subset":
            ok, why = _covers(ref, out, *args)
            why = why.replace("no matching call for", "extra call") if why else why
        else:
            ok, why = _covers(out, ref, *args)
            if ok:
                ok, why = _covers(ref, out, *args)
                why = why.replace("no matching call for", "extra call") if why else why
        return Score(1.0 if ok else 0.0, "trajectory matches" if ok else why)

    return match
