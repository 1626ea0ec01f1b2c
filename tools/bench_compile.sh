#!/bin/sh
# Compile-time benchmark for a BERT-base-sized model (random weights; see
# tools/make_bench_bert.py).  Not a test: run by hand, by `make
# bench-compile`, or by tools/bench.sh (`make bench`).
#
#   sh tools/bench_compile.sh [BUILD_DIR] [MODEL_NAME] [-- EXTRA COMPILE FLAGS]
#
# Three cold compiles (an empty compile cache: every NVRTC and ptxas run
# happens) and three warm ones (the cache filled by the cold runs: an
# unchanged recompile), default archs and buckets, all cores.  Each line is
# wall seconds, CPU seconds (user + system, children included) and the
# per-stage times `bertc compile` prints.  The cache is a private folder,
# never the user's.  Prints "cold: wall W cpu C" / "warm: ..." medians last.
set -eu
BUILD=${1:-build}
NAME=${2:-bench-bert-base}
[ $# -ge 2 ] && shift 2 || shift $#
[ "${1:-}" = "--" ] && shift
B="$BUILD/bertc"
M="$BUILD/hf/$NAME"
case "$NAME" in
    bench-bert-large) SHAPE="--layers 24 --hidden 1024 --heads 16 --intermediate 4096" ;;
    *) SHAPE="" ;;
esac
# shellcheck disable=SC2086
[ -f "$M/model.safetensors" ] || python3 tools/make_bench_bert.py "$M" $SHAPE
[ -f "$BUILD/$NAME.yaml" ] || "$B" import "$M" -o "$BUILD/$NAME.yaml" >/dev/null
CACHE=$(mktemp -d)
trap 'rm -rf "$CACHE"' EXIT
echo "== $NAME: $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg)"
run() { # run KIND [FLAGS]: one compile, one line "KIND wall W cpu C | bertc's summary"
    kind=$1
    shift
    rm -f "$BUILD/$NAME.plan"
    /usr/bin/time -f "%e %U %S" -o "$CACHE.time" env BERTC_CACHE_DIR="$CACHE/$kind" \
        "$B" compile "$BUILD/$NAME.yaml" -o "$BUILD/$NAME.plan" "$@" 2>"$CACHE.err" >/dev/null ||
        { cat "$CACHE.err"; exit 1; }
    read -r wall user sys <"$CACHE.time"
    echo "$kind wall $wall cpu $(echo "$user $sys" | awk '{printf "%.2f", $1 + $2}') | $(tail -1 "$CACHE.err" | sed 's/^bertc: wrote [^:]*: //')"
}
out=$(mktemp)
for i in 1 2 3; do rm -rf "${CACHE:?}/cold"; run cold "$@" | tee -a "$out"; done
run warm "$@" >/dev/null # fills the warm cache
for i in 1 2 3; do run warm "$@" | tee -a "$out"; done
for kind in cold warm; do
    grep "^$kind " "$out" | awk -v k="$kind" '{w[NR]=$3; c[NR]=$5} END {
        n=NR; for(i=1;i<=n;i++)for(j=i+1;j<=n;j++){if(w[j]<w[i]){t=w[i];w[i]=w[j];w[j]=t} if(c[j]<c[i]){t=c[i];c[i]=c[j];c[j]=t}}
        printf "%s: wall %.2f s, cpu %.2f s (medians of %d)\n", k, w[int((n+1)/2)], c[int((n+1)/2)], n}'
done
rm -f "$out" "$CACHE.time" "$CACHE.err"
