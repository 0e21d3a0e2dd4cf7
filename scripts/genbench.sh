#!/bin/sh
# genbench.sh measures a whole noamgen run (package load, generation,
# writing, for every registered store) on a synthetic package of N
# aggregates (default 200), in the four situations of the performance
# issue, and prints the wall time and maximum RSS of each (GNU time -v):
#
#   first       no generated files yet (the first run on the package);
#   regenerate  the generated files are up to date (noamgen run again);
#   edit        one struct changed so that the generated files are stale
#               and no longer compile (a field they use was renamed);
#   deleted     every generated file was removed.
#
# The synthetic package mixes the aggregate shapes noamgen handles: ETF
# with lookups (unique, multi-valued, composite) and a version; a
# partitioned aggregate with a reference; EAO with a nested slice; a
# counted composite key with a lookup. Every fourth aggregate has each
# shape. A hand-written file uses a generated repository of each shape,
# so that the package compiles only with its generated code (as a real
# one does). After each situation the script checks that the package
# builds (go vet), so the timing is of a run that produced correct code.
#
# The package is written to a temporary folder _genbench.* inside the
# module (folders starting with "_" are ignored by ./...) and removed
# afterwards; the Go build cache is warm (the script builds noamgen and
# the package's dependencies first).
#
#   scripts/genbench.sh [N]
#   scripts/genbench.sh -synth N DIR   # only write the synthetic package into DIR
#
# NOAMGEN=path times that noamgen binary instead of building one.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)

# synth N writes the synthetic package's aggregates (aggs.go) and the
# hand-written file that uses the generated code (use.go).
synth() {
	{
		echo "// Package p is a synthetic package for scripts/genbench.sh."
		echo "package p"
		echo
		echo 'import "time"'
		i=0
		while [ $i -lt "$1" ]; do
			case $((i % 4)) in
			0) cat <<EOT

type Agg$i struct {
	_       struct{} \`noam:"aggregate"\`
	ID      string   \`noam:"id"\`
	Name    string   \`noam:"lookup,unique"\`
	City    string   \`noam:"lookup=place"\`
	Stars   int      \`noam:"lookup=place"\`
	Tags    []string \`noam:"lookup"\`
	Score   int
	At      time.Time
	Version int64 \`noam:"version"\`
}
EOT
				;;
			1) cat <<EOT

type Agg$i struct {
	_       struct{} \`noam:"aggregate,partition=items"\`
	ID      string   \`noam:"id"\`
	Owner   string   \`noam:"ref=Agg$((i - 1))"\`
	Items   []Item$i
	Score   int
	Version int64 \`noam:"version"\`
}

type Item$i struct {
	Label string   \`bson:"label"\`
	Notes []string \`bson:"notes,omitempty"\`
	Score int      \`bson:"score"\`
}
EOT
				;;
			2) cat <<EOT

type Agg$i struct {
	_     struct{} \`noam:"aggregate,strategy=eao"\`
	ID    string   \`noam:"id"\`
	Title string
	Lines []Line$i
	Score int
}

type Line$i struct {
	Text string \`bson:"text"\`
	N    int    \`bson:"n"\`
}
EOT
				;;
			3) cat <<EOT

type Agg$i struct {
	_      struct{}  \`noam:"aggregate"\`
	Key    Key$i     \`noam:"id,counter"\`
	Author string    \`noam:"lookup"\`
	Body   string
	Score  int
}

type Key$i struct {
	Parent string
	Seq    int64
}
EOT
				;;
			esac
			i=$((i + 1))
		done
	} >"$dir/p/aggs.go"
	{
		echo "package p"
		echo
		echo 'import "go.etcd.io/bbolt"'
		echo
		echo "// Repositories uses a generated repository of each shape."
		echo "func Repositories(db *bbolt.DB) []any {"
		echo "	return []any{"
		i=0
		while [ $i -lt "$1" ] && [ $i -lt 4 ]; do
			echo "		NewAgg${i}BoltRepository(db),"
			i=$((i + 1))
		done
		echo "	}"
		echo "}"
	} >"$dir/p/use.go"
}

if [ "${1:-}" = -synth ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
	mkdir "$dir/p"
	synth "$2"
	mkdir -p "$3"
	cp "$dir"/p/*.go "$3"
	exit 0
fi
n=${1:-200}
dir=$(mktemp -d "$root/_genbench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
bin=${NOAMGEN:-$dir/noamgen.bin}
[ -n "${NOAMGEN:-}" ] || (cd "$root" && go build -o "$bin" ./cmd/noamgen)
mkdir "$dir/p"

timed() {
	(cd "$dir/p" && /usr/bin/time -v "$@") >"$dir/out.txt" 2>"$dir/time.txt" || {
		cat "$dir/out.txt" "$dir/time.txt"
		exit 1
	}
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	printf '%s wall, %4d MB max RSS' "$wall" $((rss / 1024))
}
vet() {
	(cd "$dir/p" && go vet .) || {
		echo "genbench: the generated package does not build" >&2
		exit 1
	}
}
measure() {
	printf '%-10s noamgen: %s  (%s generated files)\n' "$1" "$(timed "$bin")" "$(ls "$dir"/p/*.gen.go | wc -l)"
	vet
}

synth "$n"
# Warm the build cache with the package's dependencies (bbolt, the
# runtime): a throwaway first generation, then the timed one from scratch.
(cd "$dir/p" && "$bin" >/dev/null && go build . && rm ./*.gen.go)
echo "# $(go version | cut -d' ' -f3-), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $n aggregates, stores: every registered store"
measure first
measure regenerate
# Rename a field the generated code uses: the old generated files no
# longer compile, and loading must not compile them.
sed -i 's/^\tScore   int$/\tPoints  int/' "$dir/p/aggs.go"
if (cd "$dir/p" && go build . 2>/dev/null); then
	echo "genbench: the edit did not make the generated code stale" >&2
	exit 1
fi
measure edit
rm "$dir"/p/*.gen.go
measure deleted
