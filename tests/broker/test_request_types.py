"""Every handler receives a typed request: a union of kio's request classes over exactly the
versions it parses (protocol/request_types), or the typed view of a hand-read request (Produce,
Fetch). mypy --strict then checks each field a handler reads against every version served."""

import importlib
import pkgutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import protocol.request_types
from broker.dispatch import HANDLERS
from broker.handler import Handler
from protocol.api_keys import ApiKey
from protocol.codec import request_schema
from protocol.fetch_request import FetchRequest
from protocol.produce_request import ProduceRequest

READ_BY_HAND = {ApiKey.PRODUCE: ProduceRequest, ApiKey.FETCH: FetchRequest}


def _request_types() -> dict[str, object]:
    """Every union of protocol/request_types: handlers import them only for type checking (at run
    time the classes of each version load when a request of that version comes)."""
    names: dict[str, object] = {}
    for info in pkgutil.iter_modules(protocol.request_types.__path__):
        module = importlib.import_module(f"protocol.request_types.{info.name}")
        names.update({name: getattr(module, name) for name in module.__all__})
    return names


REQUEST_TYPES = _request_types()


def _request_type(handler: Handler) -> object:
    hint = handler.handle.__annotations__["request"]
    if not isinstance(hint, str):
        return hint
    namespace = dict(vars(sys.modules[handler.handle.__module__]), **REQUEST_TYPES)
    return eval(hint, namespace)  # noqa: S307 - a handler's own annotation, as get_type_hints evaluates it


def test_handlers_do_not_load_every_version_at_import() -> None:
    # Importing all of kio's request classes cost each broker start ~2 s of CPU (800 modules).
    code = ("import sys, broker.server; "
            "print(sum(m.startswith('protocol.request_types') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[2])
    assert out.stdout.strip() == "0", out.stdout


@pytest.mark.parametrize("key", sorted(HANDLERS), ids=lambda k: ApiKey(k).name)
def test_the_request_type_covers_exactly_the_versions_served(key: ApiKey) -> None:
    handler = HANDLERS[key]
    hint = _request_type(handler)
    if key in READ_BY_HAND:
        assert hint is READ_BY_HAND[key]
        return
    low = handler.min_version if handler.parse_min_version is None else handler.parse_min_version
    served = {request_schema(key, v) for v in range(low, handler.max_version + 1)}
    declared = set(typing.get_args(hint)) or {hint}
    assert declared == served, f"{key.name}: declared {sorted(c.__module__ for c in declared)}"


def test_a_version_range_narrows_by_class() -> None:
    # The handlers tell versions of different shapes apart with isinstance on these unions.
    from protocol.request_types.leave_group import LeaveGroupRequest, LeaveGroupRequestV3Plus

    assert set(typing.get_args(LeaveGroupRequestV3Plus)) < set(typing.get_args(LeaveGroupRequest))
    v2, v3 = request_schema(ApiKey.LEAVE_GROUP, 2), request_schema(ApiKey.LEAVE_GROUP, 3)
    assert not isinstance(v2(group_id="g", member_id="m"), LeaveGroupRequestV3Plus)
    assert isinstance(v3(group_id="g", members=()), LeaveGroupRequestV3Plus)
