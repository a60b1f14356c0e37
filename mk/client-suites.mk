# `make client-suites`: clients' own test suites against a real eosbroker (tests/franz_go.py).
# franz-go's pkg/kgo integration tests: the module at a pinned version from the Go module proxy
# (needs `go`), compiled once under build/franz-go, run against a broker started at
# transaction.version 2 and then 1; prints passed/failed/skipped and what is not run and why.
.PHONY: client-suites

client-suites: install-test
	$(PY) -m tests.franz_go
