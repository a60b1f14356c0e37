"""The services the broker runs beside its connections (the coordinators), in start order."""

from __future__ import annotations

from typing import Any

from .state import BrokerState


def build_services(state: BrokerState) -> list[Any]:
    return []
