"""broker.processes / --processes (broker/supervisor.py): what each supervised process is started
with, and the settings refused before anything starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.__main__ import load_config, main, parse_args
from broker.config import ConfigError
from broker.supervisor import LOCAL_SET_ENV, ChildSpec, child_specs


def specs(*argv: str) -> list[ChildSpec]:
    args = parse_args(list(argv))
    config, unknown = load_config(args)
    assert unknown == []
    return child_specs(config, vars(args), config.processes)


def flag_values(spec: ChildSpec, flag: str) -> list[str]:
    return [spec.argv[i + 1] for i, arg in enumerate(spec.argv) if arg == flag]


def test_node_ids_and_every_listener_port_count_up() -> None:
    found = specs("--processes", "3", "--node-id", "5", "--set", "cluster.url=postgresql://u@h/db",
                  "--set", "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9192",
                  "--set", "advertised.listeners=PLAINTEXT://kafka.example:19092", "--set", "metrics.port=9400")
    assert [s.node_id for s in found] == [5, 6, 7]
    third = found[2]
    assert flag_values(third, "--node-id") == ["7"]
    sets = flag_values(third, "--set")
    assert "listeners=PLAINTEXT://127.0.0.1:9094,SSL://127.0.0.1:9194" in sets
    assert "advertised.listeners=PLAINTEXT://kafka.example:19094" in sets
    assert "metrics.port=9402" in sets
    assert sets[-1] == "broker.processes=1"  # last: it wins over the one given
    assert third.summary == "PLAINTEXT on 127.0.0.1:9094, SSL on 127.0.0.1:9194"


def test_host_and_port_flags_become_the_processes_listeners() -> None:
    found = specs("--processes", "2", "--host", "127.0.0.1", "--port", "0", "--advertised-host", "proxy",
                  "--advertised-port", "30000", "--set", "cluster.url=postgresql://u@h/db")
    second = found[1]
    assert "--port" not in second.argv and "--host" not in second.argv
    sets = flag_values(second, "--set")
    assert "listeners=PLAINTEXT://127.0.0.1:0" in sets  # each binds its own free port
    assert "advertised.listeners=PLAINTEXT://proxy:30001" in sets


def test_an_advertised_host_on_port_0_is_refused_as_it_cannot_be_counted_up() -> None:
    """Each process binds its own free port, which advertised.listeners cannot name; the advertised
    host would be lost, so the command says so."""
    with pytest.raises(ConfigError, match="advertises host proxy on the port it binds, and binds port 0"):
        specs("--processes", "2", "--host", "127.0.0.1", "--port", "0", "--advertised-host", "proxy",
              "--set", "cluster.url=postgresql://u@h/db")
    # A wildcard host advertises the host's name, which each process works out as well.
    found = specs("--processes", "2", "--host", "0.0.0.0", "--port", "0", "--set", "cluster.url=postgresql://u@h/db")
    assert not any(arg.startswith("advertised.listeners=") for arg in found[1].argv)


def test_each_process_gets_its_own_data_dir_in_cluster_mode(tmp_path: Path) -> None:
    found = specs("--processes", "2", "--data-dir", str(tmp_path), "--set", "cluster.url=postgresql://u@h/db")
    assert [flag_values(s, "--data-dir") for s in found] == [[str(tmp_path / "node-1")], [str(tmp_path / "node-2")]]
    assert "--data-dir" not in specs("--processes", "2", "--set", "cluster.url=postgresql://u@h/db")[0].argv
    assert [s.env for s in found] == [(), ()]


def test_a_local_set_shares_the_data_dir(tmp_path: Path) -> None:
    """Without cluster.url the processes share the data dir (each keeps node-<id> inside it
    itself) and are told they are one of a set."""
    found = specs("--processes", "2", "--data-dir", str(tmp_path))
    assert [flag_values(s, "--data-dir") for s in found] == [[str(tmp_path)], [str(tmp_path)]]
    assert [dict(s.env) for s in found] == [{LOCAL_SET_ENV: "0/2"}, {LOCAL_SET_ENV: "1/2"}]


def test_auto_is_the_cores_this_process_may_use() -> None:
    config, _ = load_config(parse_args(["--processes", "auto"]))
    assert config.processes == len(os.sched_getaffinity(0))
    config, _ = load_config(parse_args(["--set", "broker.processes=1"]))
    assert config.processes == 1


@pytest.mark.parametrize("value", ["0", "-2", "two", ""])
def test_a_bad_count_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="broker.processes"):
        load_config(parse_args(["--processes", value]))


def test_the_command_says_what_is_wrong_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--processes", "0", "--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert main(["--processes", "2", "--host", "127.0.0.1", "--port", "0", "--advertised-host", "proxy",
                 "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("eosbroker: listener PLAINTEXT advertises host proxy") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing created

