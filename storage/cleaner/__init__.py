"""Log compaction for cleanup.policy=compact topics (Kafka's LogCleaner), local backend.

batch_filter.py rewrites one batch (pure); transactions.py follows aborted and committed
transactions through a pass (pure); offset_map.py maps keys to their latest offsets in one walk
of the records; throttler.py holds a pass to log.cleaner.io.max.bytes.per.second; clean_pass.py
reads and writes segment files in a worker process; swap.py is the crash-safe replacement of old
segments by cleaned ones; cleanable.py decides what to clean; log_cleaner.py runs it all in the
broker's background.
"""
