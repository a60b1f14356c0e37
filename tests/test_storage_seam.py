"""The storage seam (issue 9): handlers and coordinators reach partition logs only through
storage/api.py, so another backend (the PostgreSQL one of issue 10) can stand behind it. Only the
broker's start-up builds the backends (server.py the local one, broker/cluster/backend.py cluster
mode's), so only they may import more of storage/."""

from __future__ import annotations

import pytest

from storage.api import LogSource, PartitionLog, TopicPartition
from storage.log_manager import LogManager
from tests.test_layers import MODULES, REPO, imported_modules

BUILDS_THE_BACKEND = {"broker/server.py", "broker/cluster/backend.py"}
CALLERS = [m for m in MODULES if m.split("/")[0] in {"broker", "coordinator"} and m not in BUILDS_THE_BACKEND]


@pytest.mark.parametrize("path", CALLERS)
def test_callers_import_only_the_seam(path: str) -> None:
    module = path.removesuffix(".py").replace("/", ".")
    reached = {name for name in imported_modules(REPO / path, module)
               if name.startswith("storage.") and name.split(".")[1] != "api"}
    # `from storage.api import X` also yields "storage.api.X", which is fine
    assert not reached, f"{path} reaches past storage/api.py: {sorted(reached)}"


async def test_the_local_backend_implements_the_seam(tmp_path) -> None:  # type: ignore[no-untyped-def]
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("t", 1)
    assert isinstance(logs, LogSource)
    assert isinstance(logs.get_log(TopicPartition("t", 0)), PartitionLog)
    await logs.close()
