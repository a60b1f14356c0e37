"""TxnShard driven with no I/O by random producers, marker completions, timeouts, expiry and failed
writes, as Kafka's GroupMetadataManagerTest drives a shard: operations are checked to change
nothing, the records they return are replayed as the runtime would, and Kafka's invariants hold
(epochs never go back, every record's state follows its previous one as TransactionState allows,
and replaying every record written, from an empty shard, rebuilds the same state, also through the records'
__transaction_state bytes)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator.runtime import ApiError, CoordinatorResult
from coordinator.transaction.log import TxnLogEntry, decode_record, transaction_key, transaction_value
from coordinator.transaction.messages import Complete, SendMarkers
from coordinator.transaction.metadata import MAX_EPOCH, ProducerIdAndEpoch, TxnTransition
from coordinator.transaction.shard import TxnShard
from coordinator.transaction.state import VALID_PREVIOUS_STATES, TxnState
from protocol.errors import ErrorCode
from storage.api import TopicPartition

TID = "tx"
TIMEOUT_MS = 100
EXPIRATION_MS = 10_000
PARTITIONS = st.sets(st.builds(TopicPartition, st.sampled_from("ab"), st.integers(0, 2)), min_size=1, max_size=3)
# A write fails now and then (a failed append must leave the shard as it was).
FAIL = st.sampled_from([False, False, False, True])
# Most pauses pass a transaction's timeout; a few leave the id idle past its expiration.
PAUSE_MS = st.sampled_from([TIMEOUT_MS] * 5 + [EXPIRATION_MS])
# Errors the shard may refuse a client with; anything else would be a bug.
CLIENT_ERRORS = {ErrorCode.concurrent_transactions, ErrorCode.producer_fenced, ErrorCode.invalid_txn_state,
                 ErrorCode.invalid_producer_id_mapping}


@dataclass
class Client:
    """One producer instance: what it believes its producer id and epoch are."""

    producer_id: int
    epoch: int


def _state(shard: TxnShard) -> dict[str, tuple[object, ...]]:
    return {i: (md.snapshot(), md.pending_state) for i, md in shard.transactions.items()}


class TxnShardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.shard = TxnShard(0)
        self.ids = itertools.count(1000)
        self.now = 0
        self.clients: list[Client] = []  # the last is the live one; the others are zombies
        self.written: list[TxnLogEntry] = []  # every record persisted, in order
        self.markers: list[SendMarkers] = []  # marker writes under way
        self.seen_ids: set[int] = set()

    # -- the runtime, without I/O ---------------------------------------------------------------

    def _tick(self, ms: int = 7) -> int:
        self.now += ms
        return self.now

    def _apply(self, result: CoordinatorResult[TxnLogEntry, object, object], fail: bool = False) -> object:
        """What CoordinatorRuntime.apply does, with fail standing for a write that failed."""
        if isinstance(result.response, ApiError):
            assert result.response.code is not ErrorCode.none and result.response.message
        if not result.records:
            return result.response
        before = _state(self.shard)
        self.shard.begin(result.records)
        if fail:
            self.shard.revert(result.records)
            assert _state(self.shard) == before, "a failed write leaves the state as it was"
            return None
        for record in result.records:
            self._check_record(record)
            self.shard.replay(record)
            self.written.append(record)
        for effect in result.effects:
            if isinstance(effect, SendMarkers):
                self.markers.append(effect)
            elif isinstance(effect, Complete):
                self._apply(self.shard.complete(effect.transactional_id, effect.producer_epoch, now_ms=self.now))
        return result.response

    def _decide(self, op: object) -> CoordinatorResult[TxnLogEntry, object, object]:
        """Run a shard operation, checking it changed nothing (it only decides)."""
        before = _state(self.shard)
        result = op()  # type: ignore[operator]
        assert _state(self.shard) == before, "an operation must not change the shard"
        return result  # type: ignore[no-any-return]

    def _check_record(self, record: TxnLogEntry) -> None:
        t = record.transition
        assert t is not None
        md = self.shard.transactions.get(record.transactional_id)
        if md is None:
            assert t.state is TxnState.EMPTY and t.producer_epoch >= 0, "an id starts Empty"
        else:
            assert md.state in VALID_PREVIOUS_STATES[t.state], (md.state, t.state)
            if t.producer_id == md.producer_id:
                assert t.producer_epoch >= md.producer_epoch, "the epoch never goes back"
            else:  # a rotation: a fresh producer id at epoch 0, the old one remembered
                assert t.producer_id not in self.seen_ids and t.producer_epoch == 0
                assert t.last_producer_id == md.producer_id
            assert t.producer_epoch <= MAX_EPOCH
        self.seen_ids.add(t.producer_id)

    # -- rules -------------------------------------------------------------------------------------

    @rule(kip360=st.booleans(), fail=FAIL)
    def init_producer_id(self, kip360: bool, fail: bool) -> None:
        live = self.clients[-1] if self.clients else None
        expected = ProducerIdAndEpoch(producer_id=live.producer_id, epoch=live.epoch) if kip360 and live else None
        new_ids = [next(self.ids) for _ in range(self.shard.producer_ids_for_init(TID))]
        result = self._decide(lambda: self.shard.init_producer_id(TID, TIMEOUT_MS, expected, new_ids=new_ids,
                                                                  now_ms=self._tick(), server_tv=0))
        answer = self._apply(result, fail)
        if isinstance(answer, ApiError):
            assert answer.code in CLIENT_ERRORS, answer
        elif isinstance(answer, ProducerIdAndEpoch):
            self.clients.append(Client(answer.producer_id, answer.epoch))

    @precondition(lambda self: self.shard.get(TID) is None)
    @rule(epoch=st.integers(MAX_EPOCH - 4, MAX_EPOCH - 1))
    def loaded_near_exhaustion(self, epoch: int) -> None:
        """The shard loads an id whose epoch is nearly used up: the next bumps rotate its producer id."""
        pid = next(self.ids)
        record = TxnLogEntry(transactional_id=TID, transition=TxnTransition(
            state=TxnState.EMPTY, producer_id=pid, last_producer_id=-1, producer_epoch=epoch,
            last_producer_epoch=-1, txn_timeout_ms=TIMEOUT_MS, topic_partitions=frozenset(), txn_start_timestamp=-1,
            txn_last_update_timestamp=self.now))
        self.shard.replay(record)
        self.written.append(record)
        self.seen_ids.add(pid)
        self.clients = [Client(pid, epoch)]

    @precondition(lambda self: self.clients)
    @rule(zombie=st.booleans(), partitions=PARTITIONS, tv2=st.booleans(), fail=FAIL)
    def add_partitions(self, zombie: bool, partitions: set[TopicPartition], tv2: bool, fail: bool) -> None:
        client = self.clients[0 if zombie else -1]
        result = self._decide(lambda: self.shard.add_partitions(TID, client.producer_id, client.epoch, partitions,
                                                                tv2=tv2, now_ms=self._tick()))
        if client is not self.clients[-1]:
            assert isinstance(result.response, ApiError) and not result.records, "a zombie changes nothing"
        answer = self._apply(result, fail)
        if isinstance(answer, ApiError):
            assert answer.code in CLIENT_ERRORS, answer
        elif not fail and result.records:
            md = self.shard.get(TID)
            assert md is not None and md.state is TxnState.ONGOING and set(partitions) <= md.topic_partitions

    @precondition(lambda self: self.clients)
    @rule(zombie=st.booleans(), commit=st.booleans(), tv2=st.booleans(), fail=FAIL)
    def end_txn(self, zombie: bool, commit: bool, tv2: bool, fail: bool) -> None:
        client = self.clients[0 if zombie else -1]
        new_ids = [next(self.ids) for _ in range(self.shard.producer_ids_for_end_txn(TID, tv2))]
        result = self._decide(lambda: self.shard.end_txn(TID, client.producer_id, client.epoch, commit=commit,
                                                         tv2=tv2, new_ids=new_ids, now_ms=self._tick()))
        if client is not self.clients[-1]:
            assert not result.records, "a zombie's EndTxn writes nothing"
        answer = self._apply(result, fail)
        if isinstance(answer, ApiError):
            assert answer.code in CLIENT_ERRORS, answer
        elif isinstance(answer, ProducerIdAndEpoch) and client is self.clients[-1]:
            client.producer_id, client.epoch = answer.producer_id, answer.epoch

    @precondition(lambda self: self.markers)
    @rule(fail=FAIL)
    def markers_written(self, fail: bool) -> None:
        effect = self.markers[0]
        result = self._decide(lambda: self.shard.complete(TID, effect.marker.producer_epoch, now_ms=self._tick()))
        self._apply(result, fail)
        if not fail:
            self.markers.pop(0)
            md = self.shard.get(TID)
            assert md is not None and md.state.is_complete and not md.topic_partitions

    @rule(pause_ms=PAUSE_MS, fail=FAIL)
    def time_passes(self, pause_ms: int, fail: bool) -> None:
        now = self._tick(pause_ms)
        self._timeout_scan(now, fail)
        self._expiry_scan(now)

    def _timeout_scan(self, now: int, fail: bool) -> None:
        for transactional_id in self.shard.timed_out(now):
            result = self._decide(lambda i=transactional_id: self.shard.abort_timed_out(i, now_ms=now, server_tv=0))
            assert result.records and not isinstance(result.response, ApiError)
            self._apply(result, fail)
            if not fail:
                md = self.shard.get(transactional_id)
                assert md is not None and md.state is TxnState.PREPARE_ABORT

    def _expiry_scan(self, now: int) -> None:
        for transactional_id in self.shard.expired(now, EXPIRATION_MS):
            self._apply(self._decide(lambda i=transactional_id: self.shard.expire(i, expiration_ms=EXPIRATION_MS)))
            assert self.shard.get(transactional_id) is None
            self.clients.clear()  # every producer of the id must call InitProducerId again
            self.markers.clear()

    # -- invariants ----------------------------------------------------------------------------------

    @invariant()
    def replay_rebuilds_the_state(self) -> None:
        replayed = TxnShard(0)
        for record in self.written:
            replayed.replay(record)
        assert {i: md.snapshot() for i, md in replayed.transactions.items()} == \
               {i: md.snapshot() for i, md in self.shard.transactions.items()}

    @invariant()
    def replay_of_the_stored_bytes_rebuilds_the_state(self) -> None:
        """The same, through __transaction_state's encoding (value version 1, as Kafka writes
        once transaction.version >= 1): what a coordinator loading the shard would rebuild."""
        loaded = TxnShard(0)
        for record in self.written:
            assert record.transition is not None
            entry = decode_record(transaction_key(record.transactional_id), transaction_value(record.transition, 1))
            assert isinstance(entry, TxnLogEntry)
            loaded.replay(entry)
        # the previous epoch is kept in memory only (TransactionLogValue has no field for it; a
        # loaded id has none, as in Kafka)
        assert {i: md.snapshot() for i, md in loaded.transactions.items()} == \
               {i: replace(md.snapshot(), last_producer_epoch=-1) for i, md in self.shard.transactions.items()}

    @invariant()
    def consistent(self) -> None:
        md = self.shard.get(TID)
        if md is None:
            return
        assert md.pending_state is None, "nothing is pending between operations"
        if md.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            assert md.topic_partitions == frozenset()
        if md.state is TxnState.ONGOING:
            assert md.topic_partitions
        # a transaction being ended has its marker write under way, and only then
        assert md.state.is_preparing == bool(self.markers)


TestTxnShardMachine = TxnShardMachine.TestCase
