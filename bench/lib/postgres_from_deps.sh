# Sourced by the sweep benchmarks: on the lent GPU machine, which has no PostgreSQL, puts the
# server staged by scripts/stage-gpu-debs (.deps/root, unpacked by .deps/unpack-debs) on PATH,
# copied where the unprivileged user that runs the server can reach it. Here (PostgreSQL
# installed) it does nothing.
if [ ! -d /usr/lib/postgresql ] && ! command -v initdb >/dev/null && [ -d .deps/root/usr/lib/postgresql ]; then
  rm -rf /tmp/opcost-pgroot && cp -a .deps/root /tmp/opcost-pgroot && chmod -R a+rX /tmp/opcost-pgroot
  PATH="$(ls -d /tmp/opcost-pgroot/usr/lib/postgresql/*/bin | sort -V | tail -1):$PATH"
  export LD_LIBRARY_PATH="/tmp/opcost-pgroot/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
