#!/bin/sh
# pg.sh start|stop DIR: a throwaway PostgreSQL cluster for examples/withdb,
# from Debian's postgresql package, in DIR/pg (coldstart's {tmpdir}). It
# listens on a Unix socket in DIR/pg only (no TCP), trusts local
# connections, and skips fsync: it holds nothing worth keeping. As root,
# the cluster runs as the postgres user (initdb refuses root). `stop` with
# nothing running is not an error, so it can clean up after a start that
# failed half-way.
set -eu
[ $# -eq 2 ] || { echo "usage: pg.sh start|stop DIR" >&2; exit 2; }
op=$1
dir=$2/pg
bin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
[ -x "$bin/initdb" ] || { echo "pg.sh: no initdb in ${bin:-/usr/lib/postgresql/*/bin}: apt-get install postgresql, or set PGBIN" >&2; exit 1; }
as=
[ "$(id -u)" -ne 0 ] || as="runuser -u postgres --"
cd / # the postgres user may not enter ours
case $op in
start)
	mkdir -m 0755 "$dir"
	[ -z "$as" ] || chown postgres: "$dir"
	if ! $as "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1; then
		tail -n 20 "$dir/initdb.log" >&2
		exit 1
	fi
	cat >>"$dir/data/postgresql.conf" <<-CONF
	listen_addresses = ''
	unix_socket_directories = '$dir'
	fsync = off
	CONF
	if ! $as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -s start; then
		tail -n 20 "$dir/server.log" >&2
		exit 1
	fi
	;;
stop)
	[ -f "$dir/data/postmaster.pid" ] || exit 0
	pid=$(head -n 1 "$dir/data/postmaster.pid")
	$as "$bin/pg_ctl" -D "$dir/data" -w -s -m fast stop
	# pg_ctl returns once the lock file is gone; the postmaster may take
	# a moment more to exit. Nothing is left when stop returns.
	i=0
	while [ -d "/proc/$pid" ] && [ "$(cut -d ' ' -f 3 "/proc/$pid/stat" 2>/dev/null)" != Z ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	;;
*)
	echo "pg.sh: $op: want start or stop" >&2
	exit 2
	;;
esac
