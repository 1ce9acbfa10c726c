# agentfix — the two commands a newcomer needs are `make run` and `make test`.
GO ?= go
STATICCHECK_VERSION := v0.8.2
# Debian packages the tests use: a throwaway redis-server per test package,
# bubblewrap for the sandbox, git for repositories and the git HTTP server,
# chromium for the admin pages' browser tests, e2fsprogs for the sandbox's
# job disks.
TEST_PACKAGES := redis-server bubblewrap git chromium e2fsprogs
TEST_BINARIES := redis-server bwrap git chromium mkfs.ext4

.PHONY: run test lint bench deps build

run:
	$(GO) run ./cmd/bot serve

build:
	$(GO) build -o bin/bot ./cmd/bot

# deps installs what the tests need when it is missing (apt-get, as root only).
deps:
	@missing=""; for b in $(TEST_BINARIES); do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing test dependencies (missing:$$missing)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEST_PACKAGES) >/dev/null; \
	  else \
	    echo "missing:$$missing — install them (Debian: apt-get install $(TEST_PACKAGES)) or run make test as root" >&2; exit 1; \
	  fi; \
	fi

test: deps
	$(GO) test -race ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>&1); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# bench runs every benchmark; the webhook intake one runs next to its
# redis-benchmark reference (scripts/bench-intake.sh).
bench: deps
	$(GO) test -run '^$$' -bench . -skip '^BenchmarkIntake$$' -benchmem ./...
	scripts/bench-intake.sh
