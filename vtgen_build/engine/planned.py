"""One run's model and plan of every op: what the Python writers render from.

A clean ``generate`` run makes them (``GenerateResult.planned``); an incremental run, which
re-plans only the ops an edit touched, plans every op once more when its request writes a Python
output (the typed API, the Python autograd); an up-to-date run makes none, and its front end asks
``plan_inputs`` only when a Python output is to be written.  Either way both writers of a run
share one load and one plan of the yaml.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.files import Inputs
from ..model import Model, load_model
from ..plan.kernel import Plan, build_plan
from ..plan.policy import Policy

__all__ = ["RunPlan", "plan_inputs"]


@dataclass(frozen=True)
class RunPlan:
    inputs: Inputs  # what the model was loaded from
    model: Model
    plan: Plan  # of every op of ``model``


def plan_inputs(inputs: Inputs, policy: Policy) -> RunPlan:
    """Load ``inputs`` and plan every op under ``policy``."""
    model = load_model(inputs)
    return RunPlan(inputs, model, build_plan(model, policy))
