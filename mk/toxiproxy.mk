# toxiproxy (Shopify's TCP fault proxy) for tests/e2e/objects/test_network_faults.py: one broker
# reaches PostgreSQL and the object store through it, with latency and then a blackhole. Built
# from the Go module proxy at a pinned version with the Go toolchain the franz-go suite uses, into
# build/toxiproxy (gitignored); tests/toxiproxy.py finds it there.

.PHONY: toxiproxy

TOXIPROXY_VERSION := v2.5.0
TOXIPROXY_BIN := build/toxiproxy/toxiproxy-server-$(TOXIPROXY_VERSION)
GO ?= $(or $(shell command -v go),/usr/local/go/bin/go)

$(TOXIPROXY_BIN):
	mkdir -p build/toxiproxy/bin
	GOBIN=$(abspath build/toxiproxy/bin) $(GO) install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION)
	mv build/toxiproxy/bin/server $@

toxiproxy: $(TOXIPROXY_BIN)

test: toxiproxy
