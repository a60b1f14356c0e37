"""Load generators: one module per workload, each run as its own process.

`python -m bench.load NAME --bootstrap HOST:PORT --params JSON` sets up its
topics (untimed), prints `MARK start` when the timed part begins, and ends with
one line `RESULT {json}` holding the figures and the client's own CPU use.
"""
