"""TransactionMetadata driven by random client and coordinator actions, against a tiny model."""

import itertools

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator.transaction.metadata import TransactionMetadata
from coordinator.transaction.state import TxnState
from protocol.errors import ErrorCode, KafkaError
from storage.api import TopicPartition

PARTITIONS = st.sets(st.builds(TopicPartition, st.sampled_from("ab"), st.integers(0, 2)),
                     min_size=1, max_size=3)


class TxnMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.ids = itertools.count(1000)
        self.md = TransactionMetadata.new("t", producer_id=1, txn_timeout_ms=100, now_ms=0)
        self.now = 0
        # model: what the client believes and what the coordinator must hold
        self.epoch = -1
        self.open: set[TopicPartition] = set()
        self.preparing: bool | None = None  # None, or the commit flag being completed
        self.last_result: bool | None = None
        self.max_epoch_seen = -1

    def _apply(self, t):
        self.md.mark_pending(t)
        self.md.complete_transition(t)

    def _tick(self):
        self.now += 7
        return self.now

    @rule()
    def init_producer_id(self):
        try:
            t = self.md.prepare_init_producer_id(
                txn_timeout_ms=100, expected=None, now_ms=self._tick(),
                new_producer_id=lambda: next(self.ids))
        except KafkaError as e:
            assert e.code is ErrorCode.concurrent_transactions
            assert self.preparing is not None
            return
        self._apply(t)
        if t.state is TxnState.PREPARE_ABORT:  # fenced an open transaction
            assert self.open and self.preparing is None
            self.preparing, self.open = False, set()
            self.epoch = -2  # the client must retry InitProducerId
        else:
            assert self.preparing is None and t.state is TxnState.EMPTY
            self.epoch = t.producer_epoch
            self.open, self.last_result = set(), None

    @precondition(lambda self: self.epoch >= 0)
    @rule(partitions=PARTITIONS)
    def add_partitions(self, partitions):
        try:
            t = self.md.prepare_add_partitions(
                producer_id=self.md.producer_id, producer_epoch=self.epoch,
                partitions=partitions, now_ms=self._tick())
        except KafkaError as e:
            assert e.code is ErrorCode.concurrent_transactions and self.preparing is not None
            return
        if t is None:
            assert partitions <= self.open
            return
        self._apply(t)
        self.open |= partitions
        self.last_result = None
        assert t.topic_partitions == self.open

    @precondition(lambda self: self.epoch >= 0)
    @rule(commit=st.booleans())
    def end_txn(self, commit):
        try:
            t = self.md.prepare_end_txn(producer_id=self.md.producer_id, producer_epoch=self.epoch,
                                        commit=commit, now_ms=self._tick())
        except KafkaError as e:
            if e.code is ErrorCode.concurrent_transactions:
                assert self.preparing == commit
            else:
                assert e.code is ErrorCode.invalid_txn_state
                in_opposite = self.preparing == (not commit)
                assert in_opposite or (not self.open and self.last_result != commit)
            return
        if t is None:
            assert not self.open and self.preparing is None and self.last_result == commit
            return
        assert self.open and self.preparing is None
        self._apply(t)
        self.preparing, self.open = commit, set()

    @precondition(lambda self: self.preparing is not None)
    @rule()
    def markers_written(self):
        self._apply(self.md.prepare_complete(self._tick()))
        self.last_result, self.preparing = self.preparing, None

    @rule()
    def timeout_scan(self):
        now = self._tick() + 100
        if not self.md.is_timed_out(now):
            assert not (self.open and self.md.txn_start_timestamp + 100 < now)
            return
        assert self.open
        self._apply(self.md.prepare_timeout_abort(now))
        self.preparing, self.open = False, set()
        stale = self.epoch
        try:
            self.md.prepare_end_txn(producer_id=self.md.producer_id, producer_epoch=stale,
                                    commit=True, now_ms=now)
            raise AssertionError("a timed-out producer must be fenced")
        except KafkaError as e:
            assert e.code is ErrorCode.producer_fenced and "timed out" in e.message
        self.epoch = -2

    @invariant()
    def consistent(self):
        md = self.md
        assert md.producer_epoch >= self.max_epoch_seen
        self.max_epoch_seen = md.producer_epoch
        if md.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            assert md.topic_partitions == frozenset() and self.preparing is None
        if md.state is TxnState.ONGOING:
            assert md.topic_partitions == self.open != set()
        if md.state.is_preparing:
            assert self.preparing == (md.state is TxnState.PREPARE_COMMIT)
        assert md.pending_state is None


TestTxnMachine = TxnMachine.TestCase
