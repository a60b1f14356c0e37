"""The ClusterView of a broker on its own, for handler tests that build a BrokerState by hand."""

from __future__ import annotations

from broker.cluster.local_view import LocalClusterView
from broker.config import BrokerConfig
from broker.state import endpoint_of
from storage.api import LogSource


def local_view(logs: LogSource, config: BrokerConfig) -> LocalClusterView:
    """The broker of config alone, leading every partition of logs (the local backend's view)."""
    return LocalClusterView(logs, lambda: endpoint_of(config))
