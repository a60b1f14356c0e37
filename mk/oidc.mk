# The OpenID Connect provider of the OAUTHBEARER tests (issue 36): panva's oidc-provider from npm,
# run on the machine's Node by tests/oidc_provider.py. Installed from the committed lock file into
# tests/oidc/node_modules (gitignored).

.PHONY: oidc-provider

NPM ?= npm

oidc-provider: tests/oidc/node_modules/.stamp

tests/oidc/node_modules/.stamp: tests/oidc/package.json tests/oidc/package-lock.json
	cd tests/oidc && $(NPM) ci --no-audit --no-fund --loglevel=error
	touch $@

test: oidc-provider
bench bench-smoke: oidc-provider
