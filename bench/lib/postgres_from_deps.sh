# Sourced by the sweep benchmarks: on the lent GPU machine, which has no PostgreSQL, puts the
# server staged by scripts/stage-gpu-debs (.deps/root, unpacked by .deps/unpack-debs) on PATH,
# copied where the unprivileged user that runs the server can reach it. Here (PostgreSQL
# installed) it does nothing.
if [ ! -d /usr/lib/postgresql ] && ! command -v initdb >/dev/null; then
  if [ ! -d .deps/root/usr/lib/postgresql ]; then
    echo "postgres_from_deps: no PostgreSQL here and none unpacked: stage it with scripts/stage-gpu-debs, carry .deps, and run eval \"\$(bash .deps/unpack-debs)\" first" >&2
    exit 3
  fi
  pgroot=$(mktemp -d /tmp/opcost-pgroot.XXXXXX)
  cp -a .deps/root/. "$pgroot" && chmod -R a+rX "$pgroot"
  PATH="$(ls -d "$pgroot"/usr/lib/postgresql/*/bin | sort -V | tail -1):$PATH"
  export LD_LIBRARY_PATH="$pgroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
