"""AlterUserScramCredentials v0.

Behaviour: as Kafka's ScramControlManager: per user, either deletions or upsertions, never two
changes to one user in a request (DUPLICATE_RESOURCE); an empty name is UNACCEPTABLE_CREDENTIAL,
a mechanism other than SCRAM-SHA-256 (1) and SCRAM-SHA-512 (2) UNSUPPORTED_SASL_MECHANISM,
iterations outside 4096-16384 UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist
RESOURCE_NOT_FOUND. The client sends a salted password, never the password (kafka-configs
--add-config 'SCRAM-SHA-256=[password=...]' salts and hashes it); the broker keeps StoredKey and
ServerKey only (storage/scram_credentials.py), durably, before it answers. The accepted changes
are written together; a write that fails answers UNKNOWN_SERVER_ERROR for them and changes nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, TypeAlias

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import ScramCredentials

from ..authorizer.acl import AclOperation
from ..authorizer.checks import require_cluster
from ..handler import Handler, RequestContext
from ..security.scram import MECHANISMS, credential_from_salted_password

if TYPE_CHECKING:
    from protocol.request_types.alter_user_scram_credentials import (
        AlterUserScramCredentialsRequest,
        ScramCredentialDeletion,
        ScramCredentialUpsertion,
    )

log = logging.getLogger(__name__)
# Kafka's ScramMechanism type ids, and its ScramControlManager.MAX_ITERATIONS.
MECHANISM_TYPES: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MAX_ITERATIONS: Final = 16384
_TWICE: Final = "A user credential cannot be altered twice in the same request"


def _check(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if mechanism not in MECHANISM_TYPES:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def _check_upsertion(u: ScramCredentialUpsertion) -> tuple[ErrorCode, str] | None:
    if (error := _check(u.name, u.mechanism)) is not None:
        return error
    if u.iterations < MECHANISMS[MECHANISM_TYPES[u.mechanism]].min_iterations:
        return ErrorCode.unacceptable_credential, "Too few iterations"
    if u.iterations > MAX_ITERATIONS:
        return ErrorCode.unacceptable_credential, "Too many iterations"
    if not u.salt or not u.salted_password:
        return ErrorCode.unacceptable_credential, "Salt and salted password must not be empty"
    return None


# (deletions, upsertions, errors) by user name
_Plan: TypeAlias = (
    "tuple[dict[str, ScramCredentialDeletion], dict[str, ScramCredentialUpsertion], dict[str, tuple[ErrorCode, str]]]"
)


def _plan(request: AlterUserScramCredentialsRequest, store: ScramCredentials) -> _Plan:
    """(deletions, upsertions, errors) by user, with Kafka's precedence."""
    deletions: dict[str, ScramCredentialDeletion] = {}
    upsertions: dict[str, ScramCredentialUpsertion] = {}
    errors: dict[str, tuple[ErrorCode, str]] = {}
    for d in request.deletions:
        if d.name in errors:
            continue
        if deletions.pop(d.name, None) is not None:
            errors[d.name] = (ErrorCode.duplicate_resource, _TWICE)
        elif (error := _check(d.name, d.mechanism)) is not None:
            errors[d.name] = error
        elif store.get(d.name, MECHANISM_TYPES[d.mechanism]) is None:
            errors[d.name] = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        else:
            deletions[d.name] = d
    for u in request.upsertions:
        if u.name in errors:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            errors[u.name] = (ErrorCode.duplicate_resource, _TWICE)
        elif (error := _check_upsertion(u)) is not None:
            errors[u.name] = error
        else:
            upsertions[u.name] = u
    return deletions, upsertions, errors


async def handle(ctx: RequestContext, request: AlterUserScramCredentialsRequest) -> object:
    require_cluster(ctx, AclOperation.ALTER)
    store = ctx.broker.scram_credentials
    if store is None:  # only an in-process state made without one: a started broker always has its store
        raise KafkaError(ErrorCode.unknown_server_error, "no SCRAM credential store")
    deletions, upsertions, errors = _plan(request, store)
    changes = [(u.name, MECHANISM_TYPES[u.mechanism],
                credential_from_salted_password(MECHANISMS[MECHANISM_TYPES[u.mechanism]], u.salted_password, u.salt,
                                                u.iterations)) for u in upsertions.values()]
    try:
        await store.alter(changes, [(d.name, MECHANISM_TYPES[d.mechanism]) for d in deletions.values()])
    except Exception as exc:  # OSError from the file, the database's errors in cluster mode
        log.error("cannot store SCRAM credentials: %s", exc)
        errors |= {name: (ErrorCode.unknown_server_error, "the credentials could not be stored")
                   for name in (*deletions, *upsertions)}
        deletions, upsertions = {}, {}
    done = (*deletions, *upsertions)
    for name in done:
        log.info("SCRAM credentials of user %r altered by %s (%s)", name, ctx.session.principal, ctx.peer)
    results = [{"user": name, "error_code": ErrorCode.none, "error_message": None} for name in done]
    results += [{"user": name, "error_code": code, "error_message": text} for name, (code, text) in errors.items()]
    return ctx.respond({"throttle_time": 0, "results": results})


HANDLER = Handler(api_key=ApiKey.ALTER_USER_SCRAM_CREDENTIALS, min_version=0, max_version=0, handle=handle)
