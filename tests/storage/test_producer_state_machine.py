"""ProducerStateManager driven by random appends, retries, gaps, epoch bumps, markers and
snapshot round trips, against a small model of what Kafka's rules say must happen."""

from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from protocol.errors import ErrorCode, KafkaError
from storage.api import AppendOrigin
from storage.producer_snapshot import decode_snapshot, encode_snapshot
from storage.producer_state import ProducerStateManager
from tests.storage.helpers import header, marker

PIDS = st.sampled_from([1, 2, 3])


@dataclass
class Model:
    epoch: int = -1
    next_seq: int = 0
    batches: list[tuple[int, int, int]] = field(default_factory=list)  # (first seq, count, offset)
    txn_first: int | None = None


class ProducerStateMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.state = ProducerStateManager("t-0")
        self.model: dict[int, Model] = {}
        self.end = 0
        self.aborted = []

    def _write(self, pid, epoch, seq, count, txn):
        m = self.model.setdefault(pid, Model())
        h = header(pid, epoch, seq, count, self.end, txn=txn)
        assert self.state.update(h) is None
        if epoch != m.epoch:
            m.batches = []
        m.epoch = epoch
        m.next_seq = seq + count
        m.batches = (m.batches + [(seq, count, self.end)])[-5:]
        if txn and m.txn_first is None:
            m.txn_first = self.end
        self.end += count

    def _try(self, pid, epoch, seq, count, txn):
        return self.state.check_append(header(pid, epoch, seq, count, 0, txn=txn), AppendOrigin.CLIENT)

    @rule(pid=PIDS, count=st.integers(1, 4), txn=st.booleans())
    def append_next(self, pid, count, txn):
        m = self.model.get(pid, Model())
        epoch = max(m.epoch, 0)
        seq = m.next_seq if m.epoch >= 0 else 0
        try:
            assert self._try(pid, epoch, seq, count, txn) is None
        except KafkaError as e:
            assert e.code is ErrorCode.invalid_txn_state and m.txn_first is not None and not txn
            return
        self._write(pid, epoch, seq, count, txn)

    @rule(pid=PIDS, data=st.data())
    def retry_recent(self, pid, data):
        m = self.model.get(pid)
        if not m or not m.batches:
            return
        seq, count, offset = data.draw(st.sampled_from(m.batches))
        dup = self._try(pid, m.epoch, seq, count, m.txn_first is not None)
        assert dup is not None and dup.first_offset == offset and dup.last_offset == offset + count - 1

    @rule(pid=PIDS, gap=st.integers(1, 5))
    def gap(self, pid, gap):
        m = self.model.get(pid)
        if not m or m.epoch < 0:
            return
        try:
            self._try(pid, m.epoch, m.next_seq + gap, 1, m.txn_first is not None)
            raise AssertionError("a gap must be refused")
        except KafkaError as e:
            assert e.code is ErrorCode.out_of_order_sequence_number

    @rule(pid=PIDS)
    def stale_epoch(self, pid):
        m = self.model.get(pid)
        if not m or m.epoch < 1:
            return
        try:
            self._try(pid, m.epoch - 1, 0, 1, False)
            raise AssertionError("an older epoch must be fenced")
        except KafkaError as e:
            assert e.code is ErrorCode.invalid_producer_epoch

    @rule(pid=PIDS, commit=st.booleans(), bump=st.booleans())
    def end_txn(self, pid, commit, bump):
        m = self.model.get(pid)
        if not m or m.epoch < 0:
            return
        epoch = m.epoch + bump
        h = header(pid, epoch, offset=self.end, control=True)
        self.state.check_append(h, AppendOrigin.COORDINATOR, marker(commit))
        completed = self.state.update(h, marker(commit))
        if m.txn_first is None:
            assert completed is None
        else:
            assert completed.first_offset == m.txn_first and completed.last_offset == self.end
            assert completed.is_aborted is (not commit)
        if bump:
            m.batches, m.next_seq = [], 0
        m.epoch, m.txn_first = epoch, None
        self.end += 1

    @rule()
    def snapshot_round_trip(self):
        restored = ProducerStateManager("t-0")
        restored.restore(decode_snapshot(encode_snapshot(self.state.producers.values())), self.end)
        self.state = restored

    @invariant()
    def lso_is_oldest_open_transaction(self):
        opened = [m.txn_first for m in self.model.values() if m.txn_first is not None]
        assert self.state.first_unstable_offset() == (min(opened) if opened else None)
        assert self.state.last_stable_offset(self.end) == (min(opened) if opened else self.end)


TestProducerStateMachine = ProducerStateMachine.TestCase
