#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests: `start DIR` makes a cluster with initdb in a
# fresh directory under $TMPDIR (named in DIR/cluster) and starts it with pg_ctl, listening on a
# Unix socket there only (no TCP port), trusting local connections; it prints the URL without
# a database name (postgresql://opcost@%2F…:PORT). `stop DIR` stops it and removes it.
# PostgreSQL refuses to run as root: as root, the cluster belongs to the `postgres` user
# (Debian's package makes it) or to `nobody`, in a directory that user can reach.
set -euo pipefail
what=${1:?usage: postgres_cluster.sh start|createdb|stop DIR}
dir=${2:?usage: postgres_cluster.sh start|createdb|stop DIR}

bindir=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r) $(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)"); do
  if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then bindir=$d; break; fi
done
if [ -z "$bindir" ]; then
  echo "postgres_cluster: no initdb/pg_ctl (install Debian's postgresql package; scripts/bootstrap does)" >&2
  exit 3
fi

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    local owner=postgres
    id "$owner" >/dev/null 2>&1 || owner=nobody
    setpriv --reuid="$owner" --regid="$(id -g "$owner")" --clear-groups -- "$@"
  else
    "$@"
  fi
}

case "$what" in
  start)
    mkdir -p "$dir"
    dir_of_pointer=$dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/opcost-pg.XXXXXX")
    echo "$dir" >"$dir_of_pointer/cluster"
    if [ "$(id -u)" -eq 0 ]; then
      owner=postgres; id "$owner" >/dev/null 2>&1 || owner=nobody
      chown "$owner" "$dir"
    fi
    port=$((20000 + RANDOM % 20000))
    as_owner "$bindir/initdb" -D "$dir/data" -U opcost --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-k $dir -p $port -c listen_addresses='' -c max_connections=200 -c fsync=off" start >/dev/null ||
      { cat "$dir/server.log" >&2; exit 1; }
    # The socket directory, percent-encoded as libpq's URIs take a path for a host.
    echo "postgresql://opcost@${dir//\//%2F}:$port" | tee "$dir_of_pointer/url"
    ;;
  createdb)
    name=${3:?usage: postgres_cluster.sh createdb DIR NAME}
    url=$(cat "$dir/url")
    "$bindir/psql" -q -v ON_ERROR_STOP=1 -d "$url/postgres" -c "CREATE DATABASE $name" >/dev/null
    echo "$url/$name"
    ;;
  sql)
    name=${3:?usage: postgres_cluster.sh sql DIR NAME QUERY}
    "$bindir/psql" -qAt -v ON_ERROR_STOP=1 -d "$(cat "$dir/url")/$name" -c "${4:?a query}"
    ;;
  stop)
    [ -f "$dir/cluster" ] || exit 0
    cluster=$(cat "$dir/cluster")
    [ -d "$cluster/data" ] && as_owner "$bindir/pg_ctl" -D "$cluster/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$cluster" "$dir/cluster"
    ;;
  *)
    echo "usage: postgres_cluster.sh start|createdb|stop DIR" >&2
    exit 2
    ;;
esac
