"""CreateTopics v2-7.

Behaviour: creates topics with the requested partition count (-1 means num.partitions) and topic
configs. A replication factor from 1 up to the live broker count is accepted (with shared storage
it only says how many brokers Metadata lists as replicas); -1 means default.replication.factor,
capped at the live brokers; more is INVALID_REPLICATION_FACTOR, as is anything but -1 and 1 on a
single node. Manual replica assignments are checked as Kafka checks them (replica_assignment.py)
and fix the partition count and replication factor. validate_only checks without
creating. v5+ answers with the resulting partition count and configs. In cluster mode the answer
waits, up to the request's timeout (at most LEADERS_WAIT_S), until every new partition has a live
leader, so that a client's next Metadata request finds the topic ready to use, as Kafka's
controller assigns leaders before it answers. A request that would
create more than 10000 partitions, topics and configs is refused whole with POLICY_VIOLATION, as
Kafka's controller refuses an operation over MAX_RECORDS_PER_USER_OP records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicMetadata, TopicPartition

from ..authorizer.acl import AclOperation, ResourceType
from ..authorizer.checks import authorized, denied, may_create_topic
from ..handler import Handler, RequestContext
from .describe_configs import topic_config_entries
from .replica_assignment import new_topic_layout

if TYPE_CHECKING:
    from protocol.request_types.create_topics import CreatableTopic, CreateTopicsRequest

MAX_RECORDS_PER_USER_OP = 10_000
# The longest a CreateTopics answer waits for the new partitions' leaders (cluster mode).
LEADERS_WAIT_S = 5.0


async def _create(ctx: RequestContext, topic: CreatableTopic, validate_only: bool,
                  ) -> tuple[TopicMetadata, dict[str, object]]:
    if not may_create_topic(ctx, topic.name):
        raise denied(ctx, AclOperation.CREATE, ResourceType.TOPIC, topic.name)
    if topic.assignments:
        partitions, replication_factor = new_topic_layout(ctx, topic)
    else:
        replication_factor = _replication_factor(ctx, topic.replication_factor)
        partitions = ctx.broker.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    configs = {c.name: c.value for c in topic.configs if c.value is not None}
    meta = await ctx.broker.logs.create_topic(topic.name, partitions, configs, validate_only=validate_only,
                                              replication_factor=replication_factor)
    if not authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, topic.name, log_denied=False):
        # Kafka: created, but its configs are not shown to a caller who may not describe them.
        return meta, {"name": topic.name, "topic_id": meta.topic_id, "error_code": ErrorCode.none,
                      "num_partitions": meta.partitions, "replication_factor": replication_factor, "configs": [],
                      "topic_config_error_code": ErrorCode.topic_authorization_failed}
    return meta, {
        "name": topic.name, "topic_id": meta.topic_id, "error_code": ErrorCode.none,
        "num_partitions": meta.partitions, "replication_factor": replication_factor,
        "configs": [{"name": e["name"], "value": e["value"], "read_only": e["read_only"],
                     "config_source": e["config_source"], "is_sensitive": False}
                    for e in topic_config_entries(ctx, meta)],
    }


def _replication_factor(ctx: RequestContext, requested: int) -> int:
    live = max(len(ctx.broker.cluster.live_brokers()), 1)
    if requested == -1:
        return max(min(ctx.broker.config.default_replication_factor, live), 1)
    if requested < 1:
        raise KafkaError(ErrorCode.invalid_replication_factor, f"replication factor {requested} must be at least 1")
    if requested > live:
        brokers = "1 available broker" if live == 1 else f"{live} available brokers"
        raise KafkaError(ErrorCode.invalid_replication_factor,
                         f"replication factor {requested} is larger than the {brokers}")
    return requested


def check_batch_size(records: int) -> None:
    """Kafka's controller writes one record per topic, partition and config of an operation, at
    most MAX_RECORDS_PER_USER_OP, and refuses the whole operation beyond: a request for 2^31
    partitions is answered, not attempted."""
    if records > MAX_RECORDS_PER_USER_OP:
        raise KafkaError(ErrorCode.policy_violation, "Unable to perform excessively large batch operation.")


def _records(ctx: RequestContext, topic: CreatableTopic) -> int:
    partitions = ctx.broker.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    return 1 + max(partitions, len(topic.assignments), 0) + len(topic.configs)


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> object:
    check_batch_size(sum(_records(ctx, t) for t in request.topics))
    results: list[dict[str, object]] = []
    created: list[TopicPartition] = []
    seen: set[str] = set()
    for topic in request.topics:
        if topic.name in seen:
            results.append({"name": topic.name, "error_code": ErrorCode.invalid_request,
                           "error_message": "topic named twice in one request", "num_partitions": -1,
                           "replication_factor": -1})
            continue
        seen.add(topic.name)
        try:
            meta, result = await _create(ctx, topic, request.validate_only)
        except KafkaError as exc:
            results.append({"name": topic.name, "error_code": exc.code, "error_message": exc.message,
                            "num_partitions": -1, "replication_factor": -1})
            continue
        results.append(result)
        created += [TopicPartition(topic.name, p) for p in range(meta.partitions)]
    if created and not request.validate_only:
        await ctx.broker.cluster.await_leaders(created, min(request.timeout.total_seconds(), LEADERS_WAIT_S))
    return ctx.respond({"throttle_time": 0, "topics": results})


HANDLER = Handler(api_key=ApiKey.CREATE_TOPICS, min_version=2, max_version=7, handle=handle)
