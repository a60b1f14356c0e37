"""The group coordinator's offsets driven with no I/O, as Kafka's OffsetMetadataManagerTest drives
a shard: OffsetCommits and TxnOffsetCommits (alone or decided together as one batch), transaction
markers, OffsetDelete, DeleteGroups, the retention check, and failed writes. Decisions must change
nothing; the records of the writes that succeed are replayed as the actor replays them; committed
offsets are what was committed (a model says which, Kafka's rule for a transaction's offsets
included); and replaying every write from empty rebuilds the same groups, in memory and through the
__consumer_offsets batches the loader reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from coordinator.group import commands as c
from coordinator.group.config import GroupConfig
from coordinator.group.loader import PartitionLoader
from coordinator.group.metadata import GroupMetadata
from coordinator.group.offset_deletion import delete_group, delete_offsets, expire
from coordinator.group.offset_shard import CommitResult, OffsetShard, answer_of, is_removable
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.group.records import GroupRecord, OffsetRecord
from coordinator.group.replay import GroupReplay
from coordinator.transaction.metadata import ProducerIdAndEpoch
from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.records import build_batch, read_records
from storage.api import TopicPartition

RETENTION_MS = 100
CONFIG = GroupConfig(offset_metadata_max_bytes=4, offsets_retention_ms=RETENTION_MS)
GROUPS = st.sampled_from(["g1", "g2", ""])
PRODUCERS = st.sampled_from([None, None, 7, 8])
TP = st.builds(TopicPartition, st.sampled_from("ab"), st.integers(0, 1))
OFFSETS = st.dictionaries(TP, st.builds(OffsetAndMetadata, committed_offset=st.integers(0, 99),
                                        metadata=st.sampled_from(["", "m", "too long"])), min_size=1, max_size=3)
FAIL = st.sampled_from([False, False, False, True])


@dataclass(frozen=True)
class Commit:
    group_id: str
    offsets: dict[TopicPartition, OffsetAndMetadata]
    producer_id: int | None
    generation_id: int
    member_id: str

    def command(self) -> c.CommitOffsets:
        producer = _producer(self.producer_id)
        reply: c.Reply[dict[TopicPartition, ErrorCode]] = None  # type: ignore[assignment]  # never answered here
        return c.CommitOffsets(group_id=self.group_id, member_id=self.member_id, generation_id=self.generation_id,
                               group_instance_id=None, offsets=self.offsets, retention_ms=None,
                               producer=producer, reply=reply)


def _producer(producer_id: int | None) -> ProducerIdAndEpoch | None:
    return None if producer_id is None else ProducerIdAndEpoch(producer_id=producer_id, epoch=0)


COMMITS = st.builds(Commit, group_id=GROUPS, offsets=OFFSETS, producer_id=PRODUCERS,
                    generation_id=st.sampled_from([-1, -1, -1, 2]), member_id=st.sampled_from(["", "", "m1"]))

# What one write put in the log: records (producer id None: plain) or a marker.
Batch = tuple[tuple[GroupRecord, ...], int | None] | tuple[int, bool]
Key = tuple[str, TopicPartition]
_R = TypeVar("_R")


def _state(groups: dict[str, GroupMetadata]) -> dict[str, tuple[object, ...]]:
    return {gid: (dict(g.offsets.committed), {p: dict(o) for p, o in g.offsets.pending.items() if o})
            for gid, g in groups.items()}


def _kept(groups: dict[str, GroupMetadata]) -> dict[str, tuple[object, ...]]:
    return _state({gid: g for gid, g in groups.items() if not is_removable(g)})


def _new_group(group_id: str) -> GroupMetadata:
    return GroupMetadata(group_id, CONFIG, now_ms=0)


class OffsetShardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.groups: dict[str, GroupMetadata] = {}
        self.shard = OffsetShard(self.groups, CONFIG, lambda topic: None)
        self.replay = GroupReplay(self.groups, _new_group, lambda: 0)
        self.now = 0
        self.log: list[tuple[int, Batch]] = []  # (base offset, batch), every write that succeeded
        self.end = 0  # the log end offset
        # The model: what each group's partitions hold, as (offset, record position, commit time).
        self.committed: dict[Key, tuple[int, int, int]] = {}
        self.pending: dict[int, dict[Key, tuple[int, int, int]]] = {}

    def _decide(self, commits: list[Commit]) -> list[CommitResult]:
        self.now += 5
        created: set[str] = set()
        results = self._unchanged(lambda: [self.shard.commit(cmd.command(), self.now, created) for cmd in commits])
        for commit, result in zip(commits, results, strict=True):
            self._check_answer(commit, result)
        return results

    def _check_answer(self, commit: Commit, result: CommitResult) -> None:
        answer = answer_of(result)
        assert answer.keys() == commit.offsets.keys()
        written = {record.tp for record in result.records}
        refusals = set(answer.values()) - {ErrorCode.none, ErrorCode.offset_metadata_too_large}
        if refusals:  # refused whole: who may not commit
            assert not written and len(set(answer.values())) == 1, answer
            assert refusals <= {ErrorCode.invalid_group_id, ErrorCode.illegal_generation,
                                ErrorCode.group_id_not_found, ErrorCode.unknown_member_id}, answer
            return
        for tp, value in commit.offsets.items():
            too_large = len(value.metadata) > CONFIG.offset_metadata_max_bytes
            assert answer[tp] is (ErrorCode.offset_metadata_too_large if too_large else ErrorCode.none)
            assert (tp in written) is not too_large
        if commit.group_id == "" and commit.producer_id is not None:
            assert not result.records, "TxnOffsetCommit may not name the group ''"

    def _write(self, records: tuple[GroupRecord, ...], producer_id: int | None) -> None:
        """What the runtime does once an append succeeded: replay each record at its offset."""
        base = self.end
        for position, record in enumerate(records, base):
            assert not isinstance(record, OffsetRecord) or record.producer == _producer(producer_id)
            self.replay.replay(record, position)
            if isinstance(record, OffsetRecord) and record.value is not None:
                model = (record.value.committed_offset, position, record.value.commit_timestamp)
                if producer_id is None:
                    self.committed[(record.group_id, record.tp)] = model
                else:
                    self.pending.setdefault(producer_id, {})[(record.group_id, record.tp)] = model
            elif isinstance(record, OffsetRecord):  # a tombstone: committed and pending offsets go
                self.committed.pop((record.group_id, record.tp), None)
                for by_key in self.pending.values():
                    by_key.pop((record.group_id, record.tp), None)
        self.log.append((base, (records, producer_id)))
        self.end += len(records)

    def _unchanged(self, decide: Callable[[], _R]) -> _R:
        before = _state(self.groups)
        result = decide()
        assert _state(self.groups) == before, "a decision must not change the groups"
        return result

    @rule(commit=COMMITS, fail=FAIL)
    def commit(self, commit: Commit, fail: bool) -> None:
        (result,) = self._decide([commit])
        if result.records and not fail:
            self._write(result.records, commit.producer_id)

    @rule(commits=st.lists(COMMITS, min_size=2, max_size=4), fail=FAIL)
    def commits_together(self, commits: list[Commit], fail: bool) -> None:
        """Commits queued back to back: decided one by one before any is written, then written by
        partition and producer (here every group shares one partition)."""
        results = self._decide(commits)
        for producer_id in dict.fromkeys(commit.producer_id for commit in commits):
            records = tuple(r for commit, result in zip(commits, results, strict=True)
                            if commit.producer_id == producer_id for r in result.records)
            if records and not fail:
                self._write(records, producer_id)

    @precondition(lambda self: self.pending)
    @rule(data=st.data(), commit=st.booleans())
    def marker(self, data: st.DataObject, commit: bool) -> None:
        producer_id = data.draw(st.sampled_from(sorted(self.pending)))
        self.replay.replay_end_txn(producer_id, commit, list(self.groups))
        self.log.append((self.end, (producer_id, commit)))
        self.end += 1
        for key, value in self.pending.pop(producer_id).items():
            current = self.committed.get(key)
            if commit and (current is None or current[1] < value[1]):  # the later record wins
                self.committed[key] = value

    @rule(group_id=GROUPS, partitions=st.lists(TP, max_size=3), fail=FAIL)
    def delete_offsets(self, group_id: str, partitions: list[TopicPartition], fail: bool) -> None:
        result = self._unchanged(lambda: delete_offsets(self.groups.get(group_id), partitions))
        if group_id not in self.groups:
            assert result.response == (ErrorCode.group_id_not_found, {}) and not result.records
            return
        assert result.response == (ErrorCode.none, dict.fromkeys(partitions, ErrorCode.none))
        held = {tp for (gid, tp) in self.committed if gid == group_id}
        assert {r.tp for r in result.records if isinstance(r, OffsetRecord)} == held & set(partitions)
        if result.records and not fail:
            self._write(result.records, None)

    @rule(group_id=GROUPS, fail=FAIL)
    def delete_group(self, group_id: str, fail: bool) -> None:
        result = self._unchanged(lambda: delete_group(self.groups.get(group_id)))
        if group_id not in self.groups:
            assert result.response is ErrorCode.group_id_not_found and not result.records
            return
        assert result.response is ErrorCode.none
        if not fail:
            self._write(result.records, None)
            assert group_id not in self.groups
            assert all(gid != group_id for gid, _ in self.committed), "DeleteGroups removes its offsets"
            assert all(gid != group_id for p in self.pending.values() for gid, _ in p), "and the pending ones"

    @rule(pause=st.sampled_from([0, RETENTION_MS // 2, RETENTION_MS]), fail=FAIL)
    def retention_check(self, pause: int, fail: bool) -> None:
        self.now += pause
        pending = {key for p in self.pending.values() for key in p}
        for group_id in sorted(self.groups):
            group = self.groups[group_id]
            expiry = self._unchanged(lambda: expire(group, self.now))  # noqa: B023 (called right here)
            due = {tp for (gid, tp), (_, _, ts) in self.committed.items()
                   if gid == group_id and self.now - ts >= RETENTION_MS and (gid, tp) not in pending}
            assert {r.tp for r in expiry.records if isinstance(r, OffsetRecord)} == due
            if expiry.records and not fail:
                self._write(expiry.records, None)
                assert (group_id in self.groups) is not expiry.dead

    # -- invariants ----------------------------------------------------------------------------------

    @invariant()
    def committed_offsets_are_what_was_committed(self) -> None:
        held = {(gid, tp): (v.committed_offset, v.record_offset, v.commit_timestamp)
                for gid, g in self.groups.items() for tp, v in g.offsets.committed.items()}
        assert held == self.committed
        pending = {p: {(gid, tp): (v.committed_offset, v.record_offset, v.commit_timestamp)
                       for gid, g in self.groups.items() for tp, v in g.offsets.pending.get(p, {}).items()}
                   for p in self.pending}
        assert pending == self.pending
        holding = {gid for gid, _ in self.committed} | {gid for p in self.pending.values() for gid, _ in p}
        assert holding <= set(self.groups), "a group is kept while it holds offsets"

    @invariant()
    def replay_from_empty_rebuilds_the_state(self) -> None:
        groups: dict[str, GroupMetadata] = {}
        replay = GroupReplay(groups, _new_group, lambda: 0)
        for base, batch in self.log:
            if isinstance(batch[0], int):
                replay.replay_end_txn(batch[0], bool(batch[1]), list(groups))
            else:
                for position, record in enumerate(batch[0], base):
                    replay.replay(record, position)
        assert _state(groups) == _state(self.groups)

    @invariant()
    def loading_the_bytes_rebuilds_the_state(self) -> None:
        groups: dict[str, GroupMetadata] = {}
        loader = PartitionLoader(groups, CONFIG, now_ms=0)
        for header, records in read_records(b"".join(_encode(base, batch) for base, batch in self.log)):
            loader.apply_batch(header, records)
        # A loaded shard keeps the groups that hold something (an OffsetDelete can leave one empty).
        assert _kept(groups) == _kept(self.groups)


def _encode(base: int, batch: Batch) -> bytes:
    if isinstance(batch[0], int):
        control = ControlRecordType.COMMIT if batch[1] else ControlRecordType.ABORT
        return bytes(build_end_txn_marker(producer_id=batch[0], producer_epoch=0, coordinator_epoch=0,
                                          control_type=control, timestamp=0, base_offset=base))
    records, producer_id = batch
    assert isinstance(records, tuple)
    txn = producer_id is not None
    return bytes(build_batch([r.encode(timestamp=0) for r in records], base_offset=base, transactional=txn,
                             producer_id=-1 if producer_id is None else producer_id,
                             producer_epoch=0 if txn else -1, base_sequence=0 if txn else -1))


# Each step replays the whole log twice: shorter runs than Hypothesis's 50 steps keep it near 10 s.
TestOffsetShard = OffsetShardMachine.TestCase
TestOffsetShard.settings = settings(max_examples=80, stateful_step_count=25, deadline=None)
