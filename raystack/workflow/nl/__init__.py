"""Natural language to workflow: a rule planner, an OpenAI-compatible model planner, the plan
builder they share, and the scorer for evaluation sets in the neutral gold format."""

from raystack.workflow.nl.plan import Draft, DraftStep, Plan, PlanRefused

__all__ = ["Plan", "Draft", "DraftStep", "PlanRefused", "plan_text"]


def plan_text(text: str, name: str = "planned", llm=None) -> Plan:
    """Plan a request with the rule planner, consulting ``llm`` (an LLMPlanner) when given."""
    from raystack.workflow.nl.rules import RulePlanner
    if llm is not None:
        return llm.plan(text, name)
    return RulePlanner().plan(text, name)
