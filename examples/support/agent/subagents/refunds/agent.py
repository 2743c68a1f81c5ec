"""The refunds subagent: checks an order and issues a refund, with a person's approval."""

from agents.sdk import define_agent

agent = define_agent(
    description="Handles refund requests: checks the order, works out the amount and issues the refund "
    "(a person approves each one). Give it the order number, what is being refunded and why.",
)
