#!/bin/sh
# loadbench.sh measures noamgen's package load on a synthetic package of N
# aggregates (default 200) generated for mongo and bolt, in three situations:
#   fresh    the generated files are up to date;
#   edit     one struct gained a field (the generated files are stale and no
#            longer compile);
#   deleted  every generated file was removed.
# For each it prints the wall time and maximum RSS (GNU time -v) of the
# package load alone (scripts/loadtime, i.e. parser.Load) and of a whole
# noamgen run (load, generation, writing). The package is
# written to a temporary folder _loadbench.* inside the module (folders
# starting with "_" are ignored by ./...) and removed afterwards.
#
#   scripts/loadbench.sh [N]
#
# LOADTIME=path uses that loadtime binary instead of building one (to time
# another version of the parser).
set -eu
n=${1:-200}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "$root/_loadbench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
bin="$dir/noamgen.bin"
load=${LOADTIME:-$dir/loadtime.bin}
(cd "$root" && go build -o "$bin" ./cmd/noamgen)
[ -n "${LOADTIME:-}" ] || (cd "$root" && go build -o "$load" ./scripts/loadtime)
mkdir "$dir/p"
{
	echo "package p"
	echo
	echo 'import "time"'
	i=0
	while [ $i -lt "$n" ]; do
		cat <<EOT

type Agg$i struct {
	_       struct{} \`noam:"aggregate"\`
	ID      string   \`noam:"id"\`
	Name    string   \`noam:"lookup"\`
	Email   string   \`noam:"lookup,unique"\`
	Tags    []string \`noam:"lookup"\`
	Score   int
	At      time.Time
	Version int64 \`noam:"version"\`
}
EOT
		i=$((i + 1))
	done
} >"$dir/p/aggs.go"
timed() {
	(cd "$dir/p" && /usr/bin/time -v "$@") >/dev/null 2>"$dir/time.txt" || {
		cat "$dir/time.txt"
		exit 1
	}
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	printf '%s wall, %4d MB max RSS' "$wall" $((rss / 1024))
}
measure() {
	printf '%-8s load: %s' "$1" "$(timed "$load")"
	printf '   noamgen: %s\n' "$(timed "$bin" -store mongo,bolt)"
}
(cd "$dir/p" && "$bin" -store mongo,bolt) # first generation, warms the build cache
measure fresh
sed -i 's/^\tScore   int$/\tScore   int\n\tExtra   int/' "$dir/p/aggs.go"
sed -i '0,/^\tExtra   int$/!{/^\tExtra   int$/d}' "$dir/p/aggs.go"
measure edit
rm "$dir"/p/*.gen.go
measure deleted
