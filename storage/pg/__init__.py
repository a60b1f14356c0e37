"""Cluster mode's storage: every broker of a cluster keeps its state in one PostgreSQL database
(docs/cluster.md). Only broker/server.py builds it; everything else reaches it through
storage/api.py."""
