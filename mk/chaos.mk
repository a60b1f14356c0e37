# The history test (tests/e2e/test_history.py) with many fault cycles (issue 9): kill -9 and
# restart, SIGSTOP and SIGCONT, in turn; and its cluster twin (tests/e2e/cluster/test_cluster_history.py:
# three brokers over PostgreSQL, a broker killed, a broker paused past its lease, the database
# restarted with pg_ctl restart -m immediate), and the same over four processes of `--processes 4`,
# over PostgreSQL and as a local set sharing one data dir (tests/e2e/cluster/test_processes_history.py),
# and over PostgreSQL and an object store with its faults added: the store killed and restarted, a
# broker killed between a flush's upload and its commit, toxiproxy latency
# (tests/e2e/objects/test_object_history.py; it runs only here).
#   make chaos                        50 cycles
#   make chaos CHAOS_CYCLES=200 CHAOS_SEED=7 CHAOS_HOLD_S=5   (the broker stays down up to 5 s)
CHAOS_CYCLES ?= 50
CHAOS_SEED ?= 0
CHAOS_HOLD_S ?= 2

.PHONY: chaos

chaos: install-test postgres toxiproxy
	HISTORY_CYCLES=$(CHAOS_CYCLES) HISTORY_SEED=$(CHAOS_SEED) HISTORY_HOLD_S=$(CHAOS_HOLD_S) $(PY) -m pytest -p no:cacheprovider -q \
	  tests/e2e/test_history.py tests/e2e/cluster/test_cluster_history.py tests/e2e/cluster/test_processes_history.py \
	  tests/e2e/objects/test_object_history.py tests/history $(PYTEST_ARGS)
