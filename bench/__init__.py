"""Side-by-side benchmark of eosbroker and Apache Kafka (issue 6).

`python -m bench --size small` starts each broker in turn on loopback, runs the
same confluent-kafka load generators (bench.load, separate processes) against
it, and writes a table, a JSON file and a PNG chart under bench/results/.
"""
