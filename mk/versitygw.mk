# versitygw (issue 33): the second real S3 server of the tests (tests/versitygw_server.py) and the
# object store of the bench's eosbroker-os cases. The Go module, pinned in tests/versitygw_server.py,
# is built with the Go toolchain on PATH (as the franz-go suite finds it) into
# $XDG_CACHE_HOME/eosbroker (~/.cache/eosbroker); once there, the target does nothing.

.PHONY: versitygw

versitygw: install-test
	$(PY) -m tests.versitygw_server

test: versitygw
bench bench-smoke: versitygw
