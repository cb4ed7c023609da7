#!/usr/bin/env bash
# protobench entry point. It stays thin on purpose: it builds the protobench CLI and hands over to
# it; every decision about scenarios, images, containers and results is made in Go.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The CLI finds scenarios/, compose/ and images/ through this, wherever it is called from.
export PROTOBENCH_ROOT="$ROOT"
BIN=${PROTOBENCH_BIN:-$ROOT/bin/protobench}
# Used only when the host has no Go toolchain: the CLI is then built inside this image.
GO_IMAGE=${PROTOBENCH_GO_IMAGE:-golang:1.26-bookworm}

usage() {
  cat <<'TXT'
usage: ./run.sh <scenario> [options]     run a scenario (a name under scenarios/ or a path to a .yaml)
       ./run.sh list                     list the scenarios with their estimated time
       ./run.sh test                     run the test suite (unit, integration, end-to-end smoke)
       ./run.sh <subcommand> [args]      any protobench subcommand: run, load, list, status, report, compare, images, doctor, ...

Common options for a scenario:
  --quick            every run at most 7 s with its warm-up, and one repeat
  --dry-run          print the expanded plan and the commands, start nothing
  --repeat N         override the number of repeats
  --only FILTER      run only the steps whose name matches
  --tools a,b        run only these tools
  --out DIR          put the results folder under DIR instead of results/
  --keep-up          leave Prometheus (and Grafana) running afterwards
  --resume DIR       continue an interrupted run at its first unfinished step

Examples:
  ./run.sh grpc-vs-rest
  ./run.sh grpc-vs-rest --quick
  ./run.sh smoke --keep-up
TXT
}

build_cli() {
  mkdir -p "$(dirname "$BIN")"
  if command -v go >/dev/null 2>&1; then
    # The host CLI mostly drives containers; only its ZeroMQ driver needs libzmq (through cgo).
    # Without libzmq's headers it is built without cgo and says so if zmq:// is asked of it.
    local cgo=1
    if ! pkg-config --exists libzmq 2>/dev/null; then
      cgo=0
      echo "protobench: no libzmq headers on this host (Debian: libzmq3-dev); building the CLI without its ZeroMQ driver (the protobench image has it)" >&2
    fi
    (cd "$ROOT" && CGO_ENABLED=$cgo go build -o "$BIN" ./cmd/protobench)
  elif docker image inspect "$GO_IMAGE" >/dev/null 2>&1 || docker pull "$GO_IMAGE" >/dev/null 2>&1; then
    echo "protobench: no Go on this host; building the CLI inside $GO_IMAGE" >&2
    docker run --rm -v "$ROOT:/src" -w /src -e GOFLAGS=-buildvcs=false "$GO_IMAGE" \
      go build -o "bin/$(basename "$BIN")" ./cmd/protobench
  else
    echo "protobench: needs Go 1.25+ on PATH, or a registry serving $GO_IMAGE, to build its CLI" >&2
    exit 2
  fi
}

# Packages the tests need on a Debian host: protoc and the Python gRPC runtime for the contract
# and Python-server tests, libzmq for the cgo ZeroMQ code, wrk and Prometheus for the tool and
# dashboard tests, debootstrap for the local base image.
TEST_PACKAGES=(protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf
  python3-prometheus-client libzmq3-dev pkg-config wrk nghttp2-client prometheus chromium debootstrap)

ensure_test_packages() {
  local missing=()
  for p in "${TEST_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "protobench: installing test packages: ${missing[*]}" >&2
    apt-get update -qq
    # Debian's prometheus package may start its own service on :9090. It is left alone: the tests
    # run their own Prometheus from /usr/bin/prometheus on free ports, and the compose stack
    # publishes no port unless asked to.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "protobench: the tests need these Debian packages: ${missing[*]}" >&2
    exit 2
  fi
}

run_tests() {
  ensure_test_packages
  cd "$ROOT"
  # A decoy: a process named prometheus that the suite did not start. Nothing in the suite may
  # stop it; it is checked at the end and then ended by its PID.
  DECOY_DIR=$(mktemp -d)
  cp "$(command -v sleep)" "$DECOY_DIR/prometheus"
  "$DECOY_DIR/prometheus" 86400 &
  DECOY_PID=$!
  trap 'kill "$DECOY_PID" 2>/dev/null; rm -rf "$DECOY_DIR"' EXIT
  echo "== gofmt"
  local unformatted
  unformatted=$(gofmt -l cmd internal servers bench 2>/dev/null || true)
  if [ -n "$unformatted" ]; then
    echo "gofmt would change:"; echo "$unformatted"; return 1
  fi
  echo "== go vet"
  go vet ./...
  echo "== generated code is current"
  go run ./cmd/protobench generate --check
  # Every image a test uses is made here, before any test needs it, one line per image and a
  # progress line every 10 s while one builds: a fresh machine has none, and a test that finds
  # an image missing skips or fails late. Grafana and wrk2 cannot be had here; the suite runs
  # without them. Cold, this is the longest stage (about 40 min on a 2-core machine,
  # docs/testing.md); warm, it checks each image's content hash in a few seconds.
  echo "== images: every image the tests use (built or pulled; cached ones are checked)"
  build_cli
  "$BIN" images build --repo "$ROOT"
  echo "== unit and integration tests"
  # The swarm tests take turns with each other and with the compose-stack tests
  # (internal/swarm/swarmtest), so a package may wait for others before it starts its own work.
  go test -race -count=1 -timeout 30m ./...
  # --- fuzz (helper netloop): a short run of every wire framer's fuzzer, seeds in testdata/fuzz ---
  # Budgets are execution counts, about 10 s each on the 2-core CI machine, not durations: a
  # duration's deadline can leak out of Go's fuzz coordinator as a spurious "context deadline
  # exceeded" with no crasher (golang/go#75804, fixed only in go1.27). A count has no deadline.
  echo "== fuzz: HTTP/1.1, HTTP/2 + HPACK, gob and ZMTP framers, about 10 s each"
  for fuzzer in FuzzParseResponse:60000x:./internal/loadgen/driver/http \
    FuzzClientFrames:300000x:./internal/wire/h2wire FuzzHeaderBlocks:300000x:./internal/wire/h2wire \
    FuzzGobReplies:10000x:./internal/loadgen/driver/netrpc FuzzZMTPReplies:20000x:./internal/loadgen/driver/zmq; do
    IFS=: read -r name budget pkg <<<"$fuzzer"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" -fuzzminimizetime 100x "$pkg"
  done
  # --- end fuzz ---
  # Without -race: the race detector allows 8,128 live goroutines, and each server holds one per
  # connection.
  echo "== connection capacity: 10,000 concurrent connections on every server"
  PROTOBENCH_CAPACITY=1 go test -count=1 -timeout 10m -run TestConnectionCapacity ./internal/servertest
  # Without -race: the open model's medians against the closed model's, with the server in the
  # test's own process, which the race detector slows several times over (issue 36).
  echo "== open model: p50 against the closed model's at low load, in process"
  go test -count=1 -timeout 10m -run '^TestOpenModel(MatchesClosedAtLowLoad|PinnedMatchesClosed|PoolWaitCountsInLatency)$' ./internal/loadgen/loadcmd
  echo "== end-to-end: the smoke scenario through the real compose stack"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 25m -run TestSmokeEndToEnd -v ./internal/e2e
  echo "== end-to-end: each server's own count against each tool's (a server failing half its calls: h2load's successes flagged count-mismatch)"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 25m -run TestServerCountEndToEnd -v ./internal/e2e
  echo "== end-to-end: a server of your own (our Python image under another name, its own proto)"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 25m -run TestCustomTargetEndToEnd -v ./internal/e2e
  echo "== end-to-end: one image as two targets of one step (an A/A test of the paired ratio): no change"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 25m -run TestSameImageTwiceEndToEnd -v ./internal/e2e
  echo "== end-to-end: protobench gate (the same image twice passes or is inconclusive; a head 100 µs slower a request fails)"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 35m -run TestGateEndToEnd -v ./internal/e2e
  echo "== end-to-end: a run beside a process spinning on the tool's core is flagged busy-host; a quiet run is not"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 20m -run TestBusyHost -v ./internal/e2e
  echo "== end-to-end: the answer first (the headline step runs first, its answer printed at once, Ctrl-C then leaves a complete folder; pre-flight lines; each record's clock)"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 15m -run TestAnswerFirstThenInterrupt -v ./internal/e2e
  echo "== end-to-end: the main job's headline and cross-check steps (every tool) on a single-node Docker Swarm (--engine swarm), nothing left afterwards"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 20m -run TestSwarmEndToEnd -v ./internal/e2e
  echo "== end-to-end: a three-node swarm (two dockerds in network namespaces on a LAN of veths, image stores empty): server on node 2, the headline in cleartext and over TLS split across this node and node 3 (both parts and the merged histogram in the record)"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 30m -run TestSwarmThreeNodes -v ./internal/e2e
  echo "== faults: signals, resume, a hung docker, server and tool faults, a full disk, a decoy project"
  PROTOBENCH_E2E=1 PROTOBENCH_BIN="$BIN" go test -count=1 -timeout 25m -run '^TestFault' -v ./internal/e2e
  if ! kill -0 "$DECOY_PID" 2>/dev/null; then
    echo "FAIL: the decoy process named prometheus (pid $DECOY_PID), which the suite did not start, was stopped"
    return 1
  fi
  echo "ok: the decoy process named prometheus is still alive"
}

case "${1:-}" in
  ""|-h|--help|help) usage ;;
  test) shift; run_tests "$@" ;;
  *)
    build_cli
    case "$1" in
      run|load|list|report|status|compare|gate|images|down|generate|doctor)
        exec "$BIN" "$@" ;;
      # The lab benches are commands of their own (bench/cmd), not part of the product binary;
      # each runs the protobench binary just built as our generator (bench-aa runs its gate).
      bench-generators|bench-observability|bench-churn|bench-aa)
        (cd "$ROOT" && go build -o "$(dirname "$BIN")/$1" "./bench/cmd/$1")
        PROTOBENCH_BIN="$BIN" exec "$(dirname "$BIN")/$1" "${@:2}" ;;
      *) exec "$BIN" run "$@" ;;
    esac
    ;;
esac
