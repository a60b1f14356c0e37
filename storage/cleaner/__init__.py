"""Log compaction for cleanup.policy=compact topics (Kafka's LogCleaner), local backend.

batch_filter.py rewrites one batch (pure); transactions.py follows aborted and committed
transactions through a pass (pure); offset_map.py and clean_pass.py read and write segment
files in a worker process; swap.py is the crash-safe replacement of old segments by cleaned ones;
cleanable.py decides what to clean; log_cleaner.py runs it all in the broker's background.
"""
