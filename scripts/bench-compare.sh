#!/usr/bin/env bash
# Generated vs hand-written benchmarks (example/bench/cmpbench) on bbolt, on
# MongoDB (FerretDB in-process, or NOAM_MONGO_URI), on Redis (a single node
# started by runtime/redisstore/redistest, or NOAM_REDIS_URL) and on DynamoDB
# (dynalite, or NOAM_DYNAMO_ENDPOINT), compared by benchstat.
#
#   scripts/bench-compare.sh                  # this tree: impl=gen vs impl=hand
#   scripts/bench-compare.sh OLDREV NEWREV    # two commits: old vs new, same run
#
# With two revisions, each is checked out with `git worktree add` into a
# temporary directory, its test binaries are built once, and the runs
# alternate old, new, old, new... so that both see the same machine state;
# benchstat then compares old with new (impl=hand is the same code in both:
# its row shows the noise). A revision that predates the benchmarks gets
# them from this script's tree when OVERLAY=1 (its generator regenerates
# example/bench first; the DynamoDB baseline needs the revision's go.mod
# to have github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue).
#
# MongoDB is FerretDB v1.24.0 in a process of its own (integration/bench/
# ferretserver), shared by every run, so that B/op and allocs/op are the
# client's; MONGO_SERVER=inprocess runs it inside each benchmark process
# instead (as the integration tests do), and NOAM_MONGO_URI uses that server.
#
# DynamoDB is dynalite (tools/dynalite) in a process of its own, started
# here and shared by every run (each run uses tables of its own), unless
# NOAM_DYNAMO_ENDPOINT is set.
#
# Environment: COUNT (runs per benchmark, default 6), STORES ("bolt mongo";
# also "redis" and "dynamo"),
# BENCH (benchmark regexp, default Cmp), BOLT_BENCHTIME (default 1000x),
# MONGO_BENCHTIME (default 20x: a FerretDB write scans the collection, ~0.1 s),
# MONGO_ROUNDS (alternations for MongoDB, default 2: each process loads the
# data first, about a minute on FerretDB), REDIS_BENCHTIME (default 1000x),
# DYNAMO_BENCHTIME (default 200x: dynalite takes ~0.6 ms a request),
# DYNAMO_ROUNDS (alternations for DynamoDB, default 2: each process loads
# its data first, ~10 s on dynalite), OUT (directory for the raw
# results, default a temporary directory), BENCHSTAT (command, default
# `go run golang.org/x/perf/cmd/benchstat@latest`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

COUNT=${COUNT:-6}
STORES=${STORES:-bolt mongo}
BENCH=${BENCH:-Cmp}
BOLT_BENCHTIME=${BOLT_BENCHTIME:-1000x}
MONGO_BENCHTIME=${MONGO_BENCHTIME:-20x}
MONGO_ROUNDS=${MONGO_ROUNDS:-2}
REDIS_BENCHTIME=${REDIS_BENCHTIME:-1000x}
DYNAMO_BENCHTIME=${DYNAMO_BENCHTIME:-200x}
DYNAMO_ROUNDS=${DYNAMO_ROUNDS:-2}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench-compare.XXXXXX")}
mkdir -p "$OUT"
ferret_pid=
dynalite_pid=
wts=()
cleanup() {
	if [ -n "$ferret_pid" ]; then kill "$ferret_pid" 2>/dev/null || true; wait "$ferret_pid" 2>/dev/null || true; fi
	if [ -n "$dynalite_pid" ]; then kill "$dynalite_pid" 2>/dev/null || true; wait "$dynalite_pid" 2>/dev/null || true; fi
	for wt in "${wts[@]}"; do git -C "$root" worktree remove --force "$wt" 2>/dev/null || true; done
}
trap cleanup EXIT
if [[ " $STORES " == *" mongo "* && -z "${NOAM_MONGO_URI:-}" && "${MONGO_SERVER:-process}" != inprocess ]]; then
	(cd integration && go build -o "$OUT/ferretserver" ./bench/ferretserver)
	"$OUT/ferretserver" >"$OUT/ferretserver.uri" 2>"$OUT/ferretserver.log" &
	ferret_pid=$!
	for _ in $(seq 300); do [ -s "$OUT/ferretserver.uri" ] && break; sleep 0.1; done
	NOAM_MONGO_URI=$(head -1 "$OUT/ferretserver.uri")
	export NOAM_MONGO_URI
	echo "== FerretDB in its own process at $NOAM_MONGO_URI" >&2
fi
if [[ " $STORES " == *" dynamo "* && -z "${NOAM_DYNAMO_ENDPOINT:-}" ]]; then
	dynalite_mod="$root/tools/dynalite/node_modules/dynalite"
	if [ ! -f "$dynalite_mod/package.json" ]; then
		echo "bench-compare: dynalite is not installed (npm ci --prefix tools/dynalite), or set NOAM_DYNAMO_ENDPOINT" >&2
		exit 1
	fi
	node -e "const s = require('$dynalite_mod')({createTableMs: 0, deleteTableMs: 0, updateTableMs: 0}); s.listen(0, '127.0.0.1', () => console.log(s.address().port))" >"$OUT/dynalite.port" 2>"$OUT/dynalite.log" &
	dynalite_pid=$!
	for _ in $(seq 300); do [ -s "$OUT/dynalite.port" ] && break; sleep 0.1; done
	if [ ! -s "$OUT/dynalite.port" ]; then
		echo "bench-compare: dynalite did not start (node on the PATH?): $(cat "$OUT/dynalite.log")" >&2
		exit 1
	fi
	NOAM_DYNAMO_ENDPOINT=http://127.0.0.1:$(head -1 "$OUT/dynalite.port")
	export NOAM_DYNAMO_ENDPOINT
	echo "== dynalite in its own process at $NOAM_DYNAMO_ENDPOINT" >&2
fi
benchstat() {
	if [ -n "${BENCHSTAT:-}" ]; then $BENCHSTAT "$@"; else go run golang.org/x/perf/cmd/benchstat@latest "$@"; fi
}

# build DIR NAME: builds DIR's test binaries into $OUT/NAME-STORE.test.
build() {
	local dir=$1 name=$2
	for store in $STORES; do
		case $store in
		bolt) (cd "$dir" && go test -c -o "$OUT/$name-bolt.test" ./example/bench) ;;
		mongo) (cd "$dir/integration" && go test -c -o "$OUT/$name-mongo.test" ./bench) ;;
		redis) (cd "$dir" && go test -c -o "$OUT/$name-redis.test" ./example/bench/cmpredis) ;;
		dynamo) (cd "$dir" && go test -c -o "$OUT/$name-dynamo.test" ./example/bench/cmpdynamo) ;;
		*) echo "bench-compare: unknown store $store" >&2; exit 2 ;;
		esac
	done
}

# run NAME STORE COUNT: runs one binary, appending to $OUT/NAME.txt.
run() {
	local name=$1 store=$2 count=$3 benchtime
	case $store in
	bolt) benchtime=$BOLT_BENCHTIME ;;
	redis) benchtime=$REDIS_BENCHTIME ;;
	dynamo) benchtime=$DYNAMO_BENCHTIME ;;
	*) benchtime=$MONGO_BENCHTIME ;;
	esac
	echo "== $name $store -count $count -benchtime $benchtime" >&2
	(cd "$OUT" && "./$name-$store.test" -test.run '^$' -test.bench "$BENCH" -test.benchmem \
		-test.count "$count" -test.benchtime "$benchtime" -test.timeout 0) | tee -a "$OUT/$name.txt" | grep -E '^Benchmark' >&2 || true
}

machine() {
	echo "# $(go version), $(nproc) cores, $(free -h | awk '/^Mem/ {print $2}') RAM, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
	if [ -n "$ferret_pid" ]; then echo "# MongoDB: FerretDB v1.24.0 in its own process"; elif [[ " $STORES " == *" mongo "* ]]; then echo "# MongoDB: ${NOAM_MONGO_URI:-FerretDB v1.24.0 in each benchmark process}"; fi
	if [[ " $STORES " == *" redis "* ]]; then echo "# Redis: ${NOAM_REDIS_URL:-$(redis-server --version | cut -d' ' -f1-3), a single node started by each benchmark process}"; fi
	if [ -n "$dynalite_pid" ]; then echo "# DynamoDB: dynalite $(node -p "require('$dynalite_mod/package.json').version") in its own process"; elif [[ " $STORES " == *" dynamo "* ]]; then echo "# DynamoDB: $NOAM_DYNAMO_ENDPOINT"; fi
}

# rounds STORE: how many processes share COUNT runs (every process loads
# its data first: about a second on bbolt, a minute on FerretDB). go test
# -count repeats each sub-benchmark in a row, so separate processes are
# what interleaves impl=gen and impl=hand (and old and new).
rounds() {
	case $1 in
	bolt | redis) echo "$COUNT" ;;
	dynamo) echo "$DYNAMO_ROUNDS" ;;
	*) echo "$MONGO_ROUNDS" ;;
	esac
}

if [ $# -eq 0 ]; then
	build "$root" cur
	: >"$OUT/cur.txt"
	for store in $STORES; do
		r=$(rounds "$store")
		for _ in $(seq "$r"); do
			run cur "$store" $(((COUNT + r - 1) / r))
		done
	done
	machine
	echo "# generated (impl=gen) vs hand-written (impl=hand); raw results in $OUT/cur.txt"
	benchstat -col /impl "$OUT/cur.txt"
	exit 0
fi

if [ $# -ne 2 ]; then
	echo "usage: $0 [OLDREV NEWREV]" >&2
	exit 2
fi

head=$(git rev-parse HEAD)
for side in old new; do
	if [ $side = old ]; then rev=$1; else rev=$2; fi
	wt="$OUT/src-$side"
	git worktree add --detach "$wt" "$rev" >&2
	wts+=("$wt")
	if [ ! -d "$wt/example/bench/cmpbench" ]; then
		if [ "${OVERLAY:-}" != 1 ]; then
			echo "bench-compare: $rev has no example/bench/cmpbench; rerun with OVERLAY=1 to add this tree's benchmarks" >&2
			exit 1
		fi
		git -C "$wt" checkout "$head" -- example/bench/bench.go example/bench/cmpbench example/bench/handwritten \
			example/bench/cmp_bolt_bench_test.go integration/bench/cmp_mongo_bench_test.go \
			example/bench/cmpredis example/bench/cmpdynamo runtime/dynamostore/dynalitetest runtime/redisstore/redistest
		# The baselines of stores the revision's go.mod lacks cannot
		# build there; its generator knows its own stores only.
		grep -q 'aws-sdk-go-v2/service/dynamodb' "$wt/go.mod" || rm -rf "$wt/example/bench/handwritten/dynamo.go" "$wt/example/bench/cmpdynamo"
		grep -q 'redis/go-redis/v9' "$wt/go.mod" || rm -rf "$wt/example/bench/handwritten/redis.go" "$wt/example/bench/cmpredis"
		known=$(cd "$wt/templates" && for d in */; do d=${d%/}; [ -f "$d/$d.go" ] && printf '%s,' "$d"; done)
		(cd "$wt/example/bench" && go run github.com/noamgen/noamgen/cmd/noamgen -store "${known%,}")
	fi
	build "$wt" $side
done
: >"$OUT/old.txt"
: >"$OUT/new.txt"
for store in $STORES; do
	r=$(rounds "$store")
	per=$(((COUNT + r - 1) / r))
	for _ in $(seq "$r"); do
		run old "$store" "$per"
		run new "$store" "$per"
	done
done
machine
echo "# old = $1 ($(git rev-parse --short "$1")), new = $2 ($(git rev-parse --short "$2")); raw results in $OUT"
benchstat old="$OUT/old.txt" new="$OUT/new.txt"
