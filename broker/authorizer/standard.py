"""The authorizer: Kafka's StandardAuthorizer rules over ACLs kept durably in the data dir.

Rules (StandardAuthorizerData.authorize and findResult): a super user may do anything. Otherwise
the ACLs that apply to a resource are its LITERAL ACLs, the LITERAL `*` ACLs of its type and the
PREFIXED ACLs whose prefix starts its name. Among those, an ACL matches when its principal is the
caller's or User:*, its host is `*` or the caller's address (compared as addresses, see
principal.canonical_host), and its operation is the one asked, ALL, or (ALLOW only) one that
implies it: READ, WRITE, DELETE and ALTER imply DESCRIBE, and ALTER_CONFIGS implies
DESCRIBE_CONFIGS. A matching DENY wins over any ALLOW. When no ACL applies to the resource at all,
allow.everyone.if.no.acl.found decides; when some apply but none match, the answer is no.

Changes are decided, persisted (atomic file replace through the AclStore), then applied, so a
failed write leaves the ACLs as they were and an acknowledged change survives a restart.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from protocol.errors import ErrorCode, KafkaError
from storage.api import AclRecord, AclStore

from ..principal import canonical_host
from .acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ("StandardAuthorizer",)

log = logging.getLogger(__name__)

_IMPLIES_DESCRIBE: Final = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                                      AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS: Final = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})
_ALLOW, _DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl_result(acl: AclBinding, principal: str, host: str, operation: AclOperation) -> AclPermissionType | None:
    """ALLOW or DENY when `acl` (already known to apply to the resource) matches the caller, else None."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if acl.host != WILDCARD and canonical_host(acl.host) != host:
        return None
    if acl.operation != AclOperation.ALL and acl.operation != operation:
        # A DENY for READ does not deny DESCRIBE: implication only widens what ALLOW grants.
        if acl.permission_type != _ALLOW:
            return None
        if operation == AclOperation.DESCRIBE and acl.operation not in _IMPLIES_DESCRIBE:
            return None
        if operation == AclOperation.DESCRIBE_CONFIGS and acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
            return None
        if operation not in (AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS):
            return None
    return acl.permission_type


class _AclIndex:
    """The ACLs, immutable once built, grouped by pattern so that authorizing a name costs a
    few dict lookups: its literal name, `*`, and each prefix length in use for its type."""

    def __init__(self, acls: Iterable[AclBinding]) -> None:
        self.acls: tuple[AclBinding, ...] = tuple(dict.fromkeys(acls))
        groups: dict[tuple[ResourceType, PatternType, str], list[AclBinding]] = defaultdict(list)
        lengths: dict[ResourceType, set[int]] = defaultdict(set)
        for acl in self.acls:
            groups[acl.resource_type, acl.pattern_type, acl.resource_name].append(acl)
            if acl.pattern_type == PatternType.PREFIXED:
                lengths[acl.resource_type].add(len(acl.resource_name))
        self._groups = {key: tuple(group) for key, group in groups.items()}
        self._prefix_lengths = {rtype: tuple(sorted(ls)) for rtype, ls in lengths.items()}

    def applying_to(self, resource_type: ResourceType, name: str) -> Iterator[tuple[AclBinding, ...]]:
        groups = self._groups
        for key in ((resource_type, PatternType.LITERAL, name), (resource_type, PatternType.LITERAL, WILDCARD)):
            if (found := groups.get(key)) is not None:
                yield found
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            if (found := groups.get((resource_type, PatternType.PREFIXED, name[:length]))) is not None:
                yield found


class StandardAuthorizer:
    def __init__(self, *, super_users: frozenset[str], allow_everyone_if_no_acl_found: bool,
                 store: AclStore) -> None:
        self.super_users = super_users
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._store = store
        self._index = _AclIndex(())

    def load(self) -> None:
        """Read the stored ACLs (start-up). Raises ValueError on a file that does not parse."""
        try:
            self._index = _AclIndex(AclBinding.from_json(d) for d in self._store.load())
        except (KeyError, TypeError) as exc:
            raise ValueError(f"unreadable ACL record: {exc!r}") from None
        log.info("authorizer loaded %d ACL(s); super.users=%s, allow.everyone.if.no.acl.found=%s",
                 len(self._index.acls), ",".join(sorted(self.super_users)) or "(none)",
                 str(self.allow_everyone_if_no_acl_found).lower())

    # -- deciding ---------------------------------------------------------------------------------

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        host = canonical_host(host)
        applies = allowed = False
        for group in self._index.applying_to(resource_type, name):
            applies = True
            for acl in group:
                result = acl_result(acl, principal, host, operation)
                if result is _DENY:
                    return False
                allowed = allowed or result is _ALLOW
        return allowed or (not applies and self.allow_everyone_if_no_acl_found)

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Whether some resource of the type may exist that the caller may `operation` (Kafka's
        Authorizer.authorizeByResourceType, which lets InitProducerId without a transactional id
        through for anyone who may WRITE to some topic)."""
        if self.authorize(principal, host, operation, resource_type, "hardcode"):
            return True
        host = canonical_host(host)
        allow: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        deny: dict[PatternType, set[str]] = {PatternType.LITERAL: set(), PatternType.PREFIXED: set()}
        wildcard_allow = False
        for acl in self._index.acls:
            if (acl.resource_type != resource_type or (acl.host != WILDCARD and canonical_host(acl.host) != host)
                    or acl.principal not in (principal, WILDCARD_PRINCIPAL)
                    or acl.operation not in (operation, AclOperation.ALL)):
                continue
            if acl.pattern_type == PatternType.LITERAL and acl.resource_name == WILDCARD:
                if acl.permission_type == _DENY:
                    return False  # a DENY on every resource of the type
                wildcard_allow = True
                continue
            (deny if acl.permission_type == _DENY else allow)[acl.pattern_type].add(acl.resource_name)
        return wildcard_allow or any(not _dominated(name, pattern, deny)
                                     for pattern, names in allow.items() for name in names)

    # -- changing ---------------------------------------------------------------------------------

    def acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        return [acl for acl in self._index.acls if acl_filter.matches(acl)]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        """Adds the (validated) bindings; adding one that exists is a no-op, as in Kafka."""
        await self._replace(_AclIndex((*self._index.acls, *bindings)), added=bindings, removed=())

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[AclBinding]]:
        """The ACLs each filter removed; an ACL matched by two filters is reported by both."""
        matched = [self.acls(f) for f in filters]
        gone = {acl for group in matched for acl in group}
        if gone:
            await self._replace(_AclIndex(acl for acl in self._index.acls if acl not in gone), added=(),
                                removed=list(gone))
        return matched

    def reload(self, records: Iterable[AclRecord]) -> None:
        """The stored ACLs changed elsewhere (cluster mode: through another broker)."""
        self._index = _AclIndex(AclBinding.from_json(d) for d in records)

    async def _replace(self, index: _AclIndex, added: Sequence[AclBinding], removed: Sequence[AclBinding]) -> None:
        try:
            # The local file store writes (blocking, briefly) on the event loop: ACL changes are
            # rare admin operations, and writing them in turn keeps two concurrent changes from
            # losing either. The shared store writes only the change and answers the whole set.
            stored = await self._store.update([acl.to_json() for acl in index.acls],
                                              [acl.to_json() for acl in added], [acl.to_json() for acl in removed])
        except Exception as exc:  # OSError from a file, the database's errors in cluster mode
            raise KafkaError(ErrorCode.kafka_storage_error, f"could not store the ACLs: {exc!r}") from None
        self._index = index if stored is None else _AclIndex(AclBinding.from_json(d) for d in stored)


def _dominated(name: str, pattern: PatternType, deny: dict[PatternType, set[str]]) -> bool:
    """Whether a DENY covers every resource an ALLOW on (name, pattern) could reach."""
    if pattern == PatternType.LITERAL and name in deny[PatternType.LITERAL]:
        return True
    return any(name[:i] in deny[PatternType.PREFIXED] for i in range(1, len(name) + 1))
