#!/usr/bin/env bash
# Runs every test of noamgen on a fresh machine: installs what the tests
# need, checks formatting and vet, then runs the main module's tests
# (parser, generator, golden files, runtime, the examples on the embedded
# store and on DynamoDB (dynalite, installed with npm into tools/dynalite,
# or the endpoint at NOAM_DYNAMO_ENDPOINT), race tests) and the integration module's tests (the example on a
# real MongoDB wire-protocol server: FerretDB in-process, or the MongoDB at
# NOAM_MONGO_URI).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
	echo "test-all: Go is not installed (need Go 1.26 or later)" >&2
	exit 1
fi
echo "== $(go version)"

echo "== redis-server (Debian package redis-server, for the Redis tests)"
if ! command -v redis-server >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	$sudo apt-get update
	$sudo apt-get install -y redis-server
fi
redis-server --version

echo "== downloading Go modules"
go mod download
(cd integration && go mod download)

echo "== dynalite (the DynamoDB test server, npm, into tools/dynalite)"
if [ ! -x tools/dynalite/node_modules/.bin/dynalite ]; then
	if ! command -v npm >/dev/null 2>&1; then
		sudo=""
		if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
		$sudo apt-get update && $sudo apt-get install -y nodejs npm || true
	fi
	if command -v npm >/dev/null 2>&1; then
		npm ci --prefix tools/dynalite --no-audit --no-fund
	else
		echo "test-all: npm is not installed: the DynamoDB tests will be skipped (or set NOAM_DYNAMO_ENDPOINT)" >&2
	fi
fi

echo "== gofmt"
unformatted=$(gofmt -l $( (git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.git/*') | grep -v '^golden/testdata/bad_'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet (at ${SECONDS}s)"
go vet ./...
(cd integration && go vet ./...)

# Every go test goes through internal/testsummary: it prints what a plain
# go test prints, then the skipped tests grouped by reason; at the end (also
# after a failure) one summary says which store suites were skipped and why.
skips=$(mktemp)
go build -o "$skips.bin" ./internal/testsummary
ferret_pid=""
finish() {
	if [ -n "$ferret_pid" ]; then kill "$ferret_pid" 2>/dev/null && wait "$ferret_pid" 2>/dev/null; fi
	"$skips.bin" -report "$skips"
	rm -f "$skips" "$skips".*
}
trap finish EXIT
# go vet ./... ran every analyzer on every package of both modules above:
# the tests leave out go test's own run of a subset of them (-vet=off),
# which would type-check every tested package once more.
gotest() {
	local run="$1"
	shift
	go test -json -vet=off "$@" 2>&1 | "$skips.bin" -run "$run" -log "$skips"
}

# Every test runs once without -race: one build of every package, whose
# dependencies go vet compiled already. The race detector then reruns only
# the tests that run concurrent code, named for it (Race, Concurr,
# Reshard, Deadlines, Conflicting, Resent), and of the conformance suite
# its concurrent subtests and batch writes (which dynamostore fans out),
# picked by NOAM_STORETEST_RUN (runtime/storetest). Under -race a test
# runs 5 to 10 times slower and every package it links is built a second
# time, instrumented: running the whole suite again under it (the large
# values of the size tests, every subtest on dynalite) cost most of CI's
# time and found nothing the concurrent tests do not exercise. The
# examples' races (example/hotel, example/bench) run without it: they
# check the outcome of the same concurrent writes the conformance suite
# runs under -race, and instrumenting their generated code for every store
# was a large part of the race build.
race_run='^TestConformance(Cluster)?$|Race|Concurr|Reshard|^TestDeadlines|Conflicting|Resent'
race_subtests='^(Concurrent|Batch)'
race_pkgs=$(grep -rlE --include='*_test.go' --exclude-dir=testdata \
	'^func Test[A-Za-z0-9_]*(Race|Concurr|Reshard|Conflicting|Resent)|^func Test(Conformance(Cluster)?|Deadlines)[A-Za-z0-9_]*\(' ./runtime |
	xargs -n1 dirname | sort -u)

echo "== go test (main module) (at ${SECONDS}s)"
gotest "main module" -count=1 -timeout 30m ./...

echo "== go test -race (main module: the concurrency tests) (at ${SECONDS}s)"
NOAM_STORETEST_RUN="$race_subtests" gotest "main module -race" -count=1 -race -run "$race_run" $race_pkgs

# The integration module's concurrency tests (named *Race* or *Concurr*)
# run under -race only, in the next step: only their packages are built
# with it (FerretDB, in-process, is a large build).
echo "== go test (integration module: MongoDB wire protocol) (at ${SECONDS}s)"
(cd integration && gotest "integration module" -count=1 -timeout 30m -skip 'Race|Concurr' ./...)

echo "== go test -race (integration concurrency tests) (at ${SECONDS}s)"
race_dirs=$(cd integration && grep -rlE --include='*_test.go' '^func Test[A-Za-z0-9_]*(Race|Concurr)' . | xargs -n1 dirname | sort -u)
if [ -n "${NOAM_MONGO_URI:-}" ]; then
	(cd integration && gotest "integration module -race" -count=1 -race -run 'Race|Concurr' $race_dirs)
else
	# FerretDB runs out of process, built without -race from the packages
	# the step before compiled; the race binary leaves it out (-tags
	# noferret) and finds it through NOAM_FERRETDB_URI. Built with -race,
	# FerretDB and its SQLite would be most of this step's build.
	ferret="$skips.ferretdb"
	(cd integration && go build -o "$ferret.bin" ./mongotest/ferretdb)
	"$ferret.bin" >"$ferret.out" &
	ferret_pid=$!
	for _ in $(seq 600); do
		if [ -s "$ferret.out" ] || ! kill -0 "$ferret_pid" 2>/dev/null; then break; fi
		sleep 0.1
	done
	ferret_uri=$(head -n1 "$ferret.out")
	if [ -z "$ferret_uri" ]; then
		echo "test-all: FerretDB (integration/mongotest/ferretdb) did not start" >&2
		exit 1
	fi
	(cd integration && NOAM_FERRETDB_URI="$ferret_uri" gotest "integration module -race" -count=1 -race -tags noferret -run 'Race|Concurr' $race_dirs)
fi
echo "== done (in ${SECONDS}s)"
