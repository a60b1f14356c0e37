"""log.cleaner.* changed at run time (dynamic broker configs): the next pass uses the new backoff,
rate, buffers and map, while the number of workers stays until a restart."""

from __future__ import annotations

from storage.cleaner.log_cleaner import CleanerConfig, CleanerService


def test_reconfigure_takes_everything_but_the_worker_count() -> None:
    service = CleanerService(CleanerConfig(threads=2, backoff_ms=15_000))
    before = service.map_capacity
    service.reconfigure(CleanerConfig(threads=4, backoff_ms=50, dedupe_buffer_size=256 << 20,
                                      io_max_bytes_per_second=1e6))
    assert (service.backoff_ms, service.config.threads, service.config.io_max_bytes_per_second) == (50, 2, 1e6)
    assert service.map_capacity == 2 * before  # twice the buffer, shared by the same two workers
