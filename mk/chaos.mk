# The history test (tests/e2e/test_history.py) with many fault cycles (issue 9): kill -9 and
# restart, SIGSTOP and SIGCONT, in turn.
#   make chaos                        50 cycles
#   make chaos CHAOS_CYCLES=200 CHAOS_SEED=7 CHAOS_HOLD_S=5   (the broker stays down up to 5 s)
CHAOS_CYCLES ?= 50
CHAOS_SEED ?= 0
CHAOS_HOLD_S ?= 2

.PHONY: chaos

chaos: install-test
	HISTORY_CYCLES=$(CHAOS_CYCLES) HISTORY_SEED=$(CHAOS_SEED) HISTORY_HOLD_S=$(CHAOS_HOLD_S) $(PY) -m pytest -p no:cacheprovider -q \
	  tests/e2e/test_history.py tests/history $(PYTEST_ARGS)
