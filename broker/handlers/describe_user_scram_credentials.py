"""DescribeUserScramCredentials v0.

Behaviour: the users with SCRAM credentials (storage/scram_credentials.py) and, per mechanism,
the iteration count (never salt or keys): a request for every user (null or empty users) lists all
of them;
each named user without credentials gets RESOURCE_NOT_FOUND with Kafka's message; a user named
twice gets DUPLICATE_RESOURCE.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage.api import ScramCredential

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from .alter_user_scram_credentials import MECHANISM_TYPES

if TYPE_CHECKING:
    from protocol.request_types.describe_user_scram_credentials import DescribeUserScramCredentialsRequest

_MECHANISM_IDS = {name: type_id for type_id, name in MECHANISM_TYPES.items()}


def _result(user: str, count: int,
            credentials: Mapping[str, Mapping[str, ScramCredential]]) -> dict[str, object]:
    if count > 1:
        return {"user": user, "error_code": ErrorCode.duplicate_resource,
                "error_message": f"Cannot describe SCRAM credentials for the same user twice in a single request: "
                                 f"{user}", "credential_infos": []}
    mechanisms = credentials.get(user)
    if not mechanisms:
        return {"user": user, "error_code": ErrorCode.resource_not_found,
                "error_message": f"Attempt to describe a user credential that does not exist: {user}",
                "credential_infos": []}
    infos = [{"mechanism": _MECHANISM_IDS[name], "iterations": c.iterations} for name, c in sorted(mechanisms.items())]
    return {"user": user, "error_code": ErrorCode.none, "error_message": None, "credential_infos": infos}


async def handle(ctx: RequestContext, request: DescribeUserScramCredentialsRequest) -> object:
    require_cluster(ctx, AclOperation.DESCRIBE)
    store = ctx.broker.scram_credentials
    credentials = store.users() if store is not None else {}
    # Null or empty: every user with credentials (Kafka's describingAllUsers).
    counts = Counter(u.name for u in request.users) if request.users else Counter(sorted(credentials))
    results = [_result(user, count, credentials) for user, count in counts.items()]
    return ctx.respond({"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results})


HANDLER = Handler(api_key=ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, min_version=0, max_version=0, handle=handle)
