# agentfix — the two commands a newcomer needs are `make run` and `make test`.
GO ?= go
# pipefail: make test fails when go test does, though its output goes
# through internal/testprogress.
SHELL := bash
.SHELLFLAGS := -o pipefail -c
STATICCHECK_VERSION := v0.8.2
# Debian packages the tests use: a throwaway redis-server per test package,
# bubblewrap for the sandbox, slirp4netns and iproute2 for setup's network,
# e2fsprogs for the sandbox's job disks, git for repositories and the git
# HTTP server, chromium for the admin pages' browser tests, pytest for the
# test output parser of package proof, busybox-static for the rootfs
# package's test images.
TEST_PACKAGES := redis-server bubblewrap slirp4netns iproute2 e2fsprogs git chromium python3-pytest busybox-static
TEST_BINARIES := redis-server bwrap slirp4netns ip mkfs.ext4 git chromium pytest busybox

.PHONY: run test lint bench deps build

# run builds the bot, then serves on the embedded defaults (setup mode
# until a GitHub App is configured); Ctrl-C stops it.
run:
	@echo "compiling the bot (the first time takes a few minutes)…"
	@$(GO) build -o bin/bot ./cmd/bot
	@exec ./bin/bot serve

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

# test shows each package's result as soon as it finishes; the first run
# compiles everything with the race detector, which takes minutes. go
# test's own limit of 10 minutes per package is raised: jobs/worker's
# end-to-end tests build Go inside a container image, which on a loaded
# 2-core machine takes most of that.
test: deps
	@echo "go test -race ./... (results appear as packages finish; a first run compiles for several minutes)"
	$(GO) build -o .testprogress ./internal/testprogress
	$(GO) test -race -timeout 45m -json ./... | ./.testprogress

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>&1); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# bench runs every benchmark; the webhook intake one runs next to its
# redis-benchmark reference (scripts/bench-intake.sh).
bench: deps
	$(GO) test -run '^$$' -bench . -skip '^BenchmarkIntake(SlowFlood)?$$' -benchmem ./...
	scripts/bench-intake.sh
