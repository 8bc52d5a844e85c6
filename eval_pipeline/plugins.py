"""What a project's plugin module registers (the modules its project file lists under
``plugins``), all from here:

- evaluators: ``@register`` above an ``@evaluator`` declaration (``Score`` for a value with
  a comment; ``run_evaluator`` for a run-level one; ``normalize_messages`` reads an
  output's messages whatever their shape);
- kinds of agent (``agent: {yourkind: …}``): a subclass of ``AgentKind`` with a
  ``KindConfig``, ``@register_agent_kind`` (its agent answers an ``AgentResult``;
  ``Loading`` is what it may use while the project loads);
- behaviours of the offline model for an agent's tools: ``register_behaviour`` (a
  simulated customer's behaviour finds its goal and screen after ``GOAL_MARK`` and
  ``SCREEN_MARK`` in its prompt);
- checks of a run (against its thresholds or its baseline): ``register_check`` with a
  ``CheckSpec`` (core/scoring/checks/spec.py says what each kind of check is given).
"""

from eval_pipeline.agents.adapters.kinds import AgentKind, Build, KindConfig, Loading
from eval_pipeline.agents.adapters.kinds import register as register_agent_kind
from eval_pipeline.core.running.agent import AgentResult
from eval_pipeline.core.scoring.checks import (
    CheckOutcome,
    CheckSpec,
    GateCheck,
    GateInputs,
    ThresholdInputs,
)
from eval_pipeline.core.scoring.checks import register as register_check
from eval_pipeline.core.suites.conversation import GOAL_MARK, SCREEN_MARK
from eval_pipeline.evaluators import Score, evaluator, register, run_evaluator
from eval_pipeline.evaluators.trajectory import normalize_messages
from eval_pipeline.llm.offline import Turn, register_behaviour

__all__ = [
    "GOAL_MARK",
    "SCREEN_MARK",
    "AgentKind",
    "AgentResult",
    "Build",
    "CheckOutcome",
    "CheckSpec",
    "GateCheck",
    "GateInputs",
    "KindConfig",
    "Loading",
    "Score",
    "ThresholdInputs",
    "Turn",
    "evaluator",
    "normalize_messages",
    "register",
    "register_agent_kind",
    "register_behaviour",
    "register_check",
    "run_evaluator",
]
