# PostgreSQL for cluster mode's tests (issue 10): tests/pg_server.py starts a real server from
# Debian's `postgresql` package in a temporary directory. Installed here when missing.

.PHONY: postgres

PG_SERVER := $(firstword $(wildcard /usr/lib/postgresql/*/bin/postgres))
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

postgres:
ifeq ($(PG_SERVER),)
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
else
	@echo "PostgreSQL server: $(PG_SERVER)"
endif

test: postgres
