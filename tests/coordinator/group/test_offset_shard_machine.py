"""The group coordinator's offsets driven with no I/O, as Kafka's OffsetMetadataManagerTest drives
a shard: OffsetCommits and TxnOffsetCommits (alone or decided together as one batch), transaction
markers, and failed writes. Decisions must change nothing; the records of the writes that succeed are
replayed as the actor replays them; committed offsets are what was committed (a model says which,
Kafka's rule for a transaction's offsets included); and replaying every write from empty rebuilds the
same groups, in memory and through the __consumer_offsets batches the loader reads."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from kio.schema.errors import ErrorCode

from coordinator.group import commands as c
from coordinator.group.config import GroupConfig
from coordinator.group.loader import PartitionLoader
from coordinator.group.metadata import GroupMetadata
from coordinator.group.offset_shard import CommitResult, OffsetRecord, OffsetReplay, OffsetShard, answer_of
from coordinator.group.offsets import OffsetAndMetadata
from coordinator.transaction.metadata import ProducerIdAndEpoch
from protocol.control import ControlRecordType, build_end_txn_marker
from protocol.records import build_batch, read_records
from storage.api import TopicPartition

CONFIG = GroupConfig(offset_metadata_max_bytes=4)
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
        producer = None if self.producer_id is None else ProducerIdAndEpoch(producer_id=self.producer_id, epoch=0)
        reply: c.Reply[dict[TopicPartition, ErrorCode]] = None  # type: ignore[assignment]  # never answered here
        return c.CommitOffsets(group_id=self.group_id, member_id=self.member_id, generation_id=self.generation_id,
                               group_instance_id=None, offsets=self.offsets, retention_ms=None,
                               producer=producer, reply=reply)


COMMITS = st.builds(Commit, group_id=GROUPS, offsets=OFFSETS, producer_id=PRODUCERS,
                    generation_id=st.sampled_from([-1, -1, -1, 2]), member_id=st.sampled_from(["", "", "m1"]))

# What one write put in the log: offset records (producer id None: plain) or a marker.
Batch = tuple[tuple[OffsetRecord, ...], int | None] | tuple[int, bool]


def _state(groups: dict[str, GroupMetadata]) -> dict[str, tuple[object, ...]]:
    return {gid: (dict(g.offsets.committed), {p: dict(o) for p, o in g.offsets.pending.items() if o})
            for gid, g in groups.items()}


def _new_group(group_id: str) -> GroupMetadata:
    return GroupMetadata(group_id, CONFIG, now_ms=0)


class OffsetShardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.groups: dict[str, GroupMetadata] = {}
        self.shard = OffsetShard(self.groups, CONFIG, lambda topic: None)
        self.replay = OffsetReplay(self.groups, _new_group)
        self.now = 0
        self.log: list[tuple[int, Batch]] = []  # (base offset, batch), every write that succeeded
        self.end = 0  # the log end offset
        # The model: what each group's partitions hold, as (offset, record position).
        self.committed: dict[tuple[str, TopicPartition], tuple[int, int]] = {}
        self.pending: dict[int, dict[tuple[str, TopicPartition], tuple[int, int]]] = {}

    def _decide(self, commits: list[Commit]) -> list[CommitResult]:
        before = _state(self.groups)
        self.now += 5
        created: set[str] = set()
        results = [self.shard.commit(commit.command(), self.now, created) for commit in commits]
        assert _state(self.groups) == before, "a decision must not change the groups"
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

    def _write(self, records: tuple[OffsetRecord, ...], producer_id: int | None) -> None:
        """What the actor does once an append succeeded: replay each record at its position."""
        base = self.end
        for position, record in enumerate(records, base):
            self.replay.replay(record, position, producer_id)
            assert record.value is not None
            key = (record.group_id, record.tp)
            if producer_id is None:
                self.committed[key] = (record.value.committed_offset, position)
            else:
                self.pending.setdefault(producer_id, {})[key] = (record.value.committed_offset, position)
        self.log.append((base, (records, producer_id)))
        self.end += len(records)

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
        for key, (offset, position) in self.pending.pop(producer_id).items():
            current = self.committed.get(key)
            if commit and (current is None or current[1] < position):
                self.committed[key] = (offset, position)

    # -- invariants ----------------------------------------------------------------------------------

    @invariant()
    def committed_offsets_are_what_was_committed(self) -> None:
        held = {(gid, tp): (v.committed_offset, v.record_offset)
                for gid, g in self.groups.items() for tp, v in g.offsets.committed.items()}
        assert held == self.committed
        pending = {p: {(gid, tp): (v.committed_offset, v.record_offset) for gid, g in self.groups.items()
                       for tp, v in g.offsets.pending.get(p, {}).items()} for p in self.pending}
        assert pending == self.pending
        holding = {gid for gid, _ in self.committed} | {gid for p in self.pending.values() for gid, _ in p}
        assert set(self.groups) == holding, "a group is kept while it holds offsets, and only then"

    @invariant()
    def replay_from_empty_rebuilds_the_state(self) -> None:
        groups: dict[str, GroupMetadata] = {}
        replay = OffsetReplay(groups, _new_group)
        for base, batch in self.log:
            if isinstance(batch[0], int):
                replay.replay_end_txn(batch[0], bool(batch[1]), list(groups))
            else:
                records, producer_id = batch
                for position, record in enumerate(records, base):
                    replay.replay(record, position, producer_id)
        assert _state(groups) == _state(self.groups)

    @invariant()
    def loading_the_bytes_rebuilds_the_state(self) -> None:
        groups: dict[str, GroupMetadata] = {}
        loader = PartitionLoader(groups, CONFIG, now_ms=0)
        for header, records in read_records(b"".join(_encode(base, batch) for base, batch in self.log)):
            loader.apply_batch(header, records)
        assert _state(groups) == _state(self.groups)


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
