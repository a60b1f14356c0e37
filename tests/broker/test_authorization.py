"""Every API asks the authorizer what Kafka's KafkaApis asks: each handler, called by a principal
with no ACLs under a deny-by-default authorizer, answers its Kafka authorization error; called by a
super user, none. A new API must be entered in EXPECTED (or ASKS_NOTHING), so that no handler
lands without an authorization decision."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker.authorizer.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from broker.authorizer.standard import StandardAuthorizer
from broker.config import BrokerConfig
from broker.dispatch import HANDLERS
from broker.handler import RequestContext
from broker.principal import KafkaPrincipal, Session
from broker.services import group_coordinator, share_coordinator, transaction_coordinator
from broker.state import BrokerState
from protocol.api_keys import ApiKey
from protocol.codec import RequestHeader, decode_response
from protocol.errors import ErrorCode, KafkaError
from storage.acl_store import AclFileStore
from storage.log_manager import LogManager
from storage.producer_id_blocks import LocalProducerIdBlocks
from storage.scram_credentials import ScramCredentialStore
from tests.broker.local_view import local_view
from tests.request_samples import as_handled, sample_request

E, K = ErrorCode, ApiKey
TOPIC, GROUP, TXN, CLUSTER = (E.topic_authorization_failed, E.group_authorization_failed,
                              E.transactional_id_authorization_failed, E.cluster_authorization_failed)
EXPECTED: dict[ApiKey, ErrorCode] = {
    K.PRODUCE: TOPIC, K.FETCH: TOPIC, K.LIST_OFFSETS: TOPIC, K.OFFSET_FOR_LEADER_EPOCH: TOPIC, K.METADATA: TOPIC,
    K.DESCRIBE_TOPIC_PARTITIONS: TOPIC, K.CREATE_TOPICS: TOPIC, K.DELETE_TOPICS: TOPIC, K.CREATE_PARTITIONS: TOPIC,
    K.DELETE_RECORDS: TOPIC, K.DESCRIBE_PRODUCERS: TOPIC,
    K.OFFSET_COMMIT: GROUP, K.OFFSET_FETCH: GROUP, K.FIND_COORDINATOR: GROUP, K.JOIN_GROUP: GROUP,
    K.SYNC_GROUP: GROUP, K.HEARTBEAT: GROUP, K.LEAVE_GROUP: GROUP, K.DESCRIBE_GROUPS: GROUP, K.DELETE_GROUPS: GROUP,
    K.OFFSET_DELETE: GROUP, K.CONSUMER_GROUP_HEARTBEAT: GROUP, K.CONSUMER_GROUP_DESCRIBE: GROUP,
    K.SHARE_GROUP_HEARTBEAT: GROUP, K.SHARE_GROUP_DESCRIBE: GROUP, K.SHARE_FETCH: GROUP, K.SHARE_ACKNOWLEDGE: GROUP,
    K.DESCRIBE_SHARE_GROUP_OFFSETS: GROUP, K.ALTER_SHARE_GROUP_OFFSETS: GROUP, K.DELETE_SHARE_GROUP_OFFSETS: GROUP,
    K.ADD_OFFSETS_TO_TXN: TXN, K.END_TXN: TXN, K.TXN_OFFSET_COMMIT: TXN,
    K.DESCRIBE_TRANSACTIONS: TXN,
    # the sample has no transactional id: an idempotent producer's IDEMPOTENT_WRITE / WRITE rule
    K.INIT_PRODUCER_ID: CLUSTER,
    # v4+ is broker to broker: CLUSTER_ACTION (clients' v3 and below: CLIENT_VERSIONS)
    K.ADD_PARTITIONS_TO_TXN: CLUSTER,
    K.WRITE_TXN_MARKERS: CLUSTER,
    K.READ_SHARE_GROUP_STATE: CLUSTER, K.WRITE_SHARE_GROUP_STATE: CLUSTER, K.INITIALIZE_SHARE_GROUP_STATE: CLUSTER,
    K.DELETE_SHARE_GROUP_STATE: CLUSTER, K.READ_SHARE_GROUP_STATE_SUMMARY: CLUSTER,
    K.DESCRIBE_ACLS: CLUSTER, K.CREATE_ACLS: CLUSTER, K.DELETE_ACLS: CLUSTER,
    K.DESCRIBE_LOG_DIRS: CLUSTER, K.ALTER_PARTITION_REASSIGNMENTS: CLUSTER, K.LIST_PARTITION_REASSIGNMENTS: CLUSTER,
    K.ELECT_LEADERS: CLUSTER, K.UPDATE_FEATURES: CLUSTER, K.DESCRIBE_CLIENT_QUOTAS: CLUSTER,
    K.ALTER_CLIENT_QUOTAS: CLUSTER, K.DESCRIBE_USER_SCRAM_CREDENTIALS: CLUSTER, K.ALTER_USER_SCRAM_CREDENTIALS: CLUSTER,
    K.LIST_CONFIG_RESOURCES: CLUSTER,
    K.DESCRIBE_QUORUM: CLUSTER, K.ALTER_REPLICA_LOG_DIRS: CLUSTER, K.UNREGISTER_BROKER: CLUSTER,
    K.ADD_RAFT_VOTER: CLUSTER, K.REMOVE_RAFT_VOTER: CLUSTER,
    # resource types set below: a topic's configs are guarded by the topic
    K.DESCRIBE_CONFIGS: TOPIC, K.ALTER_CONFIGS: TOPIC, K.INCREMENTAL_ALTER_CONFIGS: TOPIC,
}
# (api, version) -> error, for versions that ask something else than the latest
CLIENT_VERSIONS: dict[tuple[ApiKey, int], ErrorCode] = {(K.ADD_PARTITIONS_TO_TXN, 3): TXN}
# Kafka checks nothing (or only filters what it lists: ListGroups, ListTransactions).
# Delegation-token requests are refused before anything is authorized: no token exists here.
ASKS_NOTHING = frozenset({K.API_VERSIONS, K.SASL_HANDSHAKE, K.SASL_AUTHENTICATE, K.DESCRIBE_CLUSTER, K.LIST_GROUPS,
                          K.LIST_TRANSACTIONS, K.CREATE_DELEGATION_TOKEN, K.RENEW_DELEGATION_TOKEN,
                          K.EXPIRE_DELEGATION_TOKEN, K.DESCRIBE_DELEGATION_TOKEN})
_CONFIG_APIS = (K.DESCRIBE_CONFIGS, K.ALTER_CONFIGS, K.INCREMENTAL_ALTER_CONFIGS)


def session(name: str) -> Session:
    return Session(principal=KafkaPrincipal("User", name), listener_name="PLAINTEXT", security_protocol="PLAINTEXT",
                   client_host="127.0.0.1")


@pytest.fixture
async def state(tmp_path: Path) -> AsyncIterator[BrokerState]:
    """Real logs and coordinators under tmp_path, so that what a super user may do gets done."""
    config = BrokerConfig(log_dirs=str(tmp_path), transaction_state_log_num_partitions=1,
                          offsets_topic_num_partitions=1)
    logs = LogManager(tmp_path, {})
    logs.load()
    logs.start()
    await logs.create_topic("t", 1)
    state = BrokerState(config=config, logs=logs, handlers=HANDLERS,
                        producer_id_blocks=LocalProducerIdBlocks(tmp_path), cluster=local_view(logs, config))
    state.authorizer = StandardAuthorizer(super_users=frozenset({"User:admin"}), allow_everyone_if_no_acl_found=False,
                                          store=AclFileStore(tmp_path))
    state.scram_credentials = ScramCredentialStore(tmp_path)
    services = [group_coordinator(state), transaction_coordinator(state), share_coordinator(state)]
    for service in services:
        await service.start()
    yield state
    for service in reversed(services):
        await service.stop()
    await logs.close()


def request_for(key: ApiKey, version: int, state: BrokerState | None = None) -> Any:
    request = sample_request(key, version)
    if key == K.PRODUCE and version >= 13 and state is not None:  # names topic "t" by its id
        topic_id = state.logs.topics["t"].topic_id
        request = dataclasses.replace(request, topic_data=tuple(dataclasses.replace(t, topic_id=topic_id)
                                                                for t in request.topic_data))
    if key == K.FETCH and version >= 13 and state is not None:  # READ is checked on the name of the id
        topic_id = state.logs.topics["t"].topic_id
        request = dataclasses.replace(request, topics=tuple(dataclasses.replace(t, topic_id=topic_id)
                                                            for t in request.topics))
    if key == K.DELETE_TOPICS:  # by name (the sample names none, so its zero id is unknown)
        request = dataclasses.replace(request, topics=tuple(dataclasses.replace(t, name="gone")
                                                            for t in request.topics))
    if key in _CONFIG_APIS:  # a TOPIC config resource (the sample's resource type 0 is no type)
        request = dataclasses.replace(request, resources=tuple(dataclasses.replace(r, resource_type=2)
                                                               for r in request.resources))
    return request


def error_codes(entity: Any) -> set[ErrorCode]:
    found: set[ErrorCode] = set()
    if dataclasses.is_dataclass(entity):
        for f in dataclasses.fields(entity):
            value = getattr(entity, f.name)
            if isinstance(value, ErrorCode):
                found.add(value)
            elif isinstance(value, tuple):
                for item in value:
                    found |= error_codes(item)
            else:
                found |= error_codes(value)
    return found


async def call(state: BrokerState, key: ApiKey, who: Session, version: int | None = None) -> set[ErrorCode]:
    """The error codes of the answer (a KafkaError the handler raises answers the whole request)."""
    version = HANDLERS[key].max_version if version is None else version
    header = RequestHeader(api_key=key, api_version=version, correlation_id=1, client_id="test")
    try:
        response = await HANDLERS[key].handle(RequestContext(header=header, broker=state, peer="test", session=who),
                                              as_handled(request_for(key, version, state)))
    except KafkaError as exc:
        return {exc.code}
    if isinstance(response, list):  # Fetch's buffers
        response = b"".join(response)
    if isinstance(response, bytes):  # Produce, Fetch and Metadata write their own (protocol/fast_responses.py)
        response = decode_response(response[4:], key, version)[1]
    return error_codes(response)


def test_every_api_has_an_authorization_decision() -> None:
    undecided = set(HANDLERS) - EXPECTED.keys() - ASKS_NOTHING
    assert not undecided, (f"{sorted(k.name for k in undecided)}: add what Kafka's KafkaApis authorizes for them "
                           "(broker/authorizer/checks.py) and enter them in EXPECTED or ASKS_NOTHING")


@pytest.mark.parametrize("key", sorted(EXPECTED.keys() & HANDLERS.keys()), ids=lambda k: k.name)
async def test_a_principal_without_acls_gets_kafkas_error(state: BrokerState, key: ApiKey) -> None:
    assert EXPECTED[key] in await call(state, key, session("mallory"))


@pytest.mark.parametrize(("key", "version"), sorted(CLIENT_VERSIONS), ids=lambda k: str(k))
async def test_client_versions_get_kafkas_error(state: BrokerState, key: ApiKey, version: int) -> None:
    assert CLIENT_VERSIONS[key, version] in await call(state, key, session("mallory"), version)


@pytest.mark.parametrize("key", sorted(HANDLERS), ids=lambda k: k.name)
async def test_a_super_user_is_refused_nothing(state: BrokerState, key: ApiKey) -> None:
    refused = {TOPIC, GROUP, TXN, CLUSTER} & await call(state, key, session("admin"))
    assert not refused


async def test_authorized_operations_are_reported_when_asked(state: BrokerState) -> None:
    """Kafka's AuthHelper.authorizedOperations: a bit per supported operation the caller may use."""
    assert state.authorizer is not None
    await state.authorizer.create_acls([AclBinding(
        resource_type=ResourceType.TOPIC, resource_name="t", pattern_type=PatternType.LITERAL, principal="User:alice",
        host="*", operation=AclOperation.READ, permission_type=AclPermissionType.ALLOW)])

    async def ask(key: ApiKey, who: str, **fields: Any) -> Any:
        version = HANDLERS[key].max_version
        header = RequestHeader(api_key=key, api_version=version, correlation_id=1, client_id="test")
        ctx = RequestContext(header=header, broker=state, peer="test", session=session(who))
        response = await HANDLERS[key].handle(ctx, dataclasses.replace(request_for(key, version), **fields))
        return decode_response(response[4:], key, version)[1] if isinstance(response, bytes) else response

    def topic_ops(response: Any) -> int:
        ops: int = response.topics[0].topic_authorized_operations
        return ops

    def cluster_ops(response: Any) -> int:
        ops: int = response.cluster_authorized_operations
        return ops

    asked = {"include_topic_authorized_operations": True}
    assert topic_ops(await ask(K.METADATA, "alice", **asked)) == (1 << AclOperation.READ) | (1 << AclOperation.DESCRIBE)
    assert topic_ops(await ask(K.METADATA, "admin", **asked)) == sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
    assert topic_ops(await ask(K.METADATA, "admin")) == -2147483648  # not asked for
    asked = {"include_cluster_authorized_operations": True}
    assert cluster_ops(await ask(K.DESCRIBE_CLUSTER, "alice", **asked)) == 0  # no DESCRIBE on the CLUSTER
    assert cluster_ops(await ask(K.DESCRIBE_CLUSTER, "admin", **asked)) == sum(
        1 << op for op in (5, 7, 8, 9, 10, 11, 12))


async def test_a_consumer_group_heartbeat_needs_describe_on_every_subscribed_topic(state: BrokerState) -> None:
    """Kafka 4's KafkaApis.handleConsumerGroupHeartbeat: after READ on the group, a subscribed
    topic name the member may not DESCRIBE fails the whole heartbeat with TOPIC_AUTHORIZATION_FAILED
    (librdkafka's 0109-auto_create_topics waits for it with group.protocol=consumer)."""
    assert state.authorizer is not None
    group = request_for(K.CONSUMER_GROUP_HEARTBEAT, 1).group_id

    def allow(resource_type: ResourceType, name: str, operation: AclOperation) -> AclBinding:
        return AclBinding(resource_type=resource_type, resource_name=name, pattern_type=PatternType.LITERAL,
                          principal="User:alice", host="*", operation=operation,
                          permission_type=AclPermissionType.ALLOW)

    await state.authorizer.create_acls([allow(ResourceType.GROUP, group, AclOperation.READ)])
    assert await call(state, K.CONSUMER_GROUP_HEARTBEAT, session("alice")) == {E.topic_authorization_failed}
    await state.authorizer.create_acls([allow(ResourceType.TOPIC, "t", AclOperation.DESCRIBE)])
    assert E.topic_authorization_failed not in await call(state, K.CONSUMER_GROUP_HEARTBEAT, session("alice"))
