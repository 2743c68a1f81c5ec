"""Factories for agents, sessions, turns and events."""

from __future__ import annotations

from pathlib import Path

import factory

from agent_platform.tests.factories import PrincipalFactory
from agents.models import Agent, AgentSource
from sessions_app.models import Session, Turn


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent
        django_get_or_create = ["slug"]

    slug = factory.Sequence(lambda n: f"agent-{n}")
    source = AgentSource.DIRECTORY
    # Every factory agent serves the weather example's tree.
    path = str(Path(__file__).resolve().parents[2] / "examples" / "weather")


class SessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Session

    principal = factory.SubFactory(PrincipalFactory)
    tenant = factory.LazyAttribute(lambda session: session.principal.tenant)
    agent = factory.SubFactory(AgentFactory)
    title = factory.Sequence(lambda n: f"Session number {n}")


class TurnFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Turn

    session = factory.SubFactory(SessionFactory)
    message = "hello"
