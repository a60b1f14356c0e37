"""A PySpark Structured Streaming pipeline that reads transfer events from the broker at
read_committed through Spark's own Kafka connector, keeps per-account balances, and writes
them to parquet and back to the broker."""
