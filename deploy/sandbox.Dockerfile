# syntax=docker/dockerfile:1
#
# The default sandbox image: what the agent's commands run in when a
# repository names no image of its own (AGENTFIX_SANDBOX_IMAGE). Debian
# bookworm with Go, Node.js LTS (npm, and pnpm and yarn through corepack),
# Python 3 with pip, venv and uv, a JDK with Maven and Gradle, Rust,
# build-essential, git and ripgrep. Build and push it from the repository
# root:
#
#   docker build -f deploy/sandbox.Dockerfile -t REGISTRY/agentfix-sandbox:1 deploy
#   docker push REGISTRY/agentfix-sandbox:1
#
# and set AGENTFIX_SANDBOX_IMAGE to the pushed digest
# (REGISTRY/agentfix-sandbox@sha256:…), so every job runs what was tested.
#
# Every tool comes pinned: Debian packages from the bookworm release (apt
# checks their signatures), toolchains copied from their official images
# at an exact version (set the *_IMAGE arguments to NAME@sha256:… to pin
# the digests too), pnpm and yarn by version and by the sha512 of their
# npm tarballs, which corepack checks before it installs them. Nothing is
# fetched with curl. A test (deploy/sandbox_dockerfile_test.go) checks
# these rules and the tool list.

# GO_VERSION follows the go directive of go.mod (a test checks it).
ARG GO_VERSION=1.26.8
ARG NODE_VERSION=24.21.0
ARG RUST_VERSION=1.95.0
ARG UV_VERSION=0.13.8
ARG GRADLE_VERSION=8.14.3
ARG GO_IMAGE=golang:${GO_VERSION}-bookworm
ARG NODE_IMAGE=node:${NODE_VERSION}-bookworm-slim
ARG RUST_IMAGE=rust:${RUST_VERSION}-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:${UV_VERSION}
ARG GRADLE_IMAGE=gradle:${GRADLE_VERSION}-jdk17

FROM ${GO_IMAGE} AS go
FROM ${NODE_IMAGE} AS node
FROM ${RUST_IMAGE} AS rust
FROM ${UV_IMAGE} AS uv
FROM ${GRADLE_IMAGE} AS gradle

FROM debian:bookworm-slim AS sandbox
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       build-essential ca-certificates git ripgrep \
       python3 python3-pip python3-venv python-is-python3 \
       openjdk-17-jdk-headless maven \
       curl unzip xz-utils pkg-config libssl-dev \
    && rm -rf /var/lib/apt/lists/*

COPY --from=go /usr/local/go /usr/local/go
COPY --from=node /usr/local/bin/node /usr/local/bin/node
COPY --from=node /usr/local/lib/node_modules /usr/local/lib/node_modules
COPY --from=node /usr/local/include/node /usr/local/include/node
COPY --from=rust /usr/local/rustup /usr/local/rustup
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=uv /uv /uvx /usr/local/bin/
COPY --from=gradle /opt/gradle /opt/gradle

# Toolchains are shared and read-only; what a job downloads (modules,
# crates, packages) goes under the user's HOME, which the worker keeps
# warm between jobs of a repository.
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/home/sandbox/.cargo \
    COREPACK_HOME=/usr/local/share/corepack \
    COREPACK_ENABLE_DOWNLOAD_PROMPT=0 \
    GOTOOLCHAIN=local \
    PATH=/home/sandbox/.cargo/bin:/usr/local/cargo/bin:/usr/local/go/bin:/home/sandbox/go/bin:/opt/gradle/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# npm, npx and corepack as the node image links them; corepack puts its
# pnpm and yarn shims next to node, with these versions as the defaults
# (a repository's packageManager field still wins).
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack \
    && corepack enable --install-directory /usr/local/bin pnpm yarn \
    && corepack install -g pnpm@12.23.0+sha512.02da94ffaf133f46074322afe552f90d40b5f71ae259aefbccdacc5085b1d617e98d65e0131f5748b9b67445978ee5055d7d59a473f1eef0d504854fefcd5975 \
    && corepack install -g yarn@1.22.22+sha512.a6b2f7906b721bba3d67d4aff083df04dad64c399707841b7acf00f6b133b7ac24255f2652fa22ae3534329dc6180534e98d17432037ff6fd140556e2bb3137e \
    && chmod -R a+rX /usr/local/share/corepack

# A fixed non-root user; the sandbox maps whoever runs the worker to it.
RUN groupadd --gid 1000 sandbox \
    && useradd --uid 1000 --gid 1000 --create-home --home-dir /home/sandbox --shell /bin/bash sandbox \
    && mkdir -p /workspace \
    && chown 1000:1000 /workspace

USER 1000:1000
WORKDIR /workspace
# One line per tool, so a build fails on a missing one.
RUN go version && node --version && npm --version && pnpm --version && yarn --version \
    && python3 --version && pip --version && uv --version \
    && java -version && mvn --version && gradle --version \
    && rustc --version && cargo --version && gcc --version && make --version \
    && git --version && rg --version
CMD ["/bin/bash"]
