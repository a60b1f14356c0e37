"""The command line: --node-id and the properties it sets (python -m broker --node-id N ...)."""

from __future__ import annotations

import pytest

from broker.__main__ import load_config, parse_args


def config_of(*argv: str):  # type: ignore[no-untyped-def]
    config, unknown = load_config(parse_args(list(argv)))
    assert unknown == []
    return config


def test_node_id_flag_sets_node_id() -> None:
    assert config_of("--node-id", "3").node_id == 3


def test_node_id_flag_wins_over_set() -> None:
    assert config_of("--set", "node.id=2", "--node-id", "5").node_id == 5


def test_cluster_mode_keys_from_the_command_line() -> None:
    config = config_of("--node-id", "2", "--set", "cluster.url=postgresql://u@127.0.0.1:5432/db",
                       "--set", "cluster.lease.ms=4000")
    url = "postgresql://u@127.0.0.1:5432/db"
    assert (config.node_id, config.cluster_url, config.cluster_lease_ms) == (2, url, 4000)


def test_negative_node_id_is_refused() -> None:
    with pytest.raises(Exception, match="node.id"):
        config_of("--node-id", "-1")
