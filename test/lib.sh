# test/lib.sh: shell helpers shared by test/run, test/demo and test/bench/run.
#
# Sourced, never run.  Everything here works on a fresh Debian 12 machine:
# as root it installs the Debian packages it needs; as another user it says
# exactly which apt-get line to run.  PostgreSQL refuses to run as root, so
# throwaway servers run as the "postgres" user with their data directory and
# socket in a temporary directory.

PG_MAJOR=${PG_MAJOR:-15}
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/$PG_MAJOR/bin}
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}
export PATH="$PG_BINDIR:$PATH"

# Packages each command needs (Debian 12 names).
# The Kafka gateway (src/kafka) links libpq: libpq-dev is a build package.
# Its tests use real Kafka clients: kcat, librdkafka's Python binding and
# kafka-python.
EL_BUILD_PKGS="make gcc libc6-dev postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR libpq-dev"
EL_TEST_PKGS="postgresql-$PG_MAJOR-pgtap libtap-parser-sourcehandler-pgtap-perl libipc-run-perl procps python3-psycopg kcat python3-confluent-kafka python3-kafka openssl"
EL_BENCH_PKGS="postgresql-$PG_MAJOR-pgq3 pgqd gnuplot-nox python3-psycopg python3-confluent-kafka kcat"
# The Kafka gateway's codecs (src/kafka/compress.c) and TLS/SCRAM (OpenSSL),
# built with the rest; its TLS test makes certificates with openssl.
# librdkafka-dev: the CLI's relay into Apache Kafka (src/cli/relay_kafka.c).
EL_KAFKA_PKGS="zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev libssl-dev librdkafka-dev"
EL_BUILD_PKGS="$EL_BUILD_PKGS $EL_KAFKA_PKGS"

el_log() { printf '==> %s\n' "$*"; }
el_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# el_ensure_packages PKG...: install what is missing (root), or explain.
el_ensure_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        el_log "installing Debian packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null || el_die "apt-get update failed"
        # The server and its headers must come from the same point release
        # (bookworm-security may carry a newer -dev than the image's server):
        # installing the server alongside upgrades both together.
        apt-get install -y -qq --no-install-recommends "${missing[@]}" \
            postgresql-$PG_MAJOR >/dev/null \
            || el_die "apt-get install ${missing[*]} failed"
    else
        el_die "missing Debian packages; run: sudo apt-get install -y ${missing[*]}"
    fi
}

# el_ensure_kafkajs: kafkajs (a Kafka client in JavaScript, from npm) for
# the gateway's client tests, in $EL_NPM_DIR (a cache outside the tree that
# the postgres user running the TAP tests can read); Debian's nodejs and
# npm first if node or npm is missing.  Prints the directory whose
# node_modules holds it.
EL_KAFKAJS_VERSION=2.2.4
el_ensure_kafkajs() {
    local dir=${EL_NPM_DIR:-/var/tmp/pg_eventlog-npm}
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        el_ensure_packages nodejs npm >&2
    fi
    if [ "$(node -e "try { console.log(require('$dir/node_modules/kafkajs/package.json').version) } catch (e) {}" 2>/dev/null)" \
            != "$EL_KAFKAJS_VERSION" ]; then
        mkdir -p "$dir" || el_die "cannot create $dir"
        el_log "installing kafkajs $EL_KAFKAJS_VERSION from npm into $dir" >&2
        npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error \
                "kafkajs@$EL_KAFKAJS_VERSION" >&2 \
            || el_die "npm install kafkajs@$EL_KAFKAJS_VERSION failed (it needs the npm registry)"
    fi
    echo "$dir"
}

# el_build_install: compile (warnings are errors) and install the extension.
# With EL_TEST_HOOKS=1 in the environment (test/run sets it) the build has
# the test-only settings (eventlog.debug_*); without it, a release build.
el_build_install() {
    local make_args=(PG_CONFIG="$PG_CONFIG" WERROR=1 with_llvm=no EL_TEST_HOOKS="${EL_TEST_HOOKS:-}")
    el_log "building pg_eventlog${EL_TEST_HOOKS:+ (with test-only settings)}"
    make -s "${make_args[@]}" >/dev/null || el_die "build failed"
    if [ "$(id -u)" -eq 0 ]; then
        make -s "${make_args[@]}" install >/dev/null || el_die "make install failed"
    else
        sudo make -s "${make_args[@]}" install >/dev/null \
            || el_die "make install needs root; run: sudo make install PG_CONFIG=$PG_CONFIG"
    fi
}

# el_as_postgres CMD...: run a command as the postgres user (from /tmp, as
# that user cannot enter /root).
el_as_postgres() {
    if [ "$(id -un)" = postgres ]; then
        (cd /tmp && "$@")
    else
        (cd /tmp && runuser -u postgres -- "$@")
    fi
}

# el_start_server CONF_FILE: start a throwaway server with the settings in
# CONF_FILE appended to postgresql.conf; exports PGHOST, PGPORT, PGUSER,
# EL_SERVER_DIR and EL_SERVER_LOG.  Stop it with el_stop_server.
el_start_server() {
    local conf=$1
    EL_SERVER_DIR=$(mktemp -d /tmp/pg_eventlog.XXXXXX)
    chmod 755 "$EL_SERVER_DIR"
    chown postgres: "$EL_SERVER_DIR" 2>/dev/null || true
    EL_SERVER_LOG=$EL_SERVER_DIR/server.log
    PGPORT=${EL_PORT:-$(( 20000 + RANDOM % 20000 ))}
    el_as_postgres initdb -D "$EL_SERVER_DIR/data" --auth=trust --no-sync \
        -U postgres -E UTF8 --locale=C.UTF-8 >"$EL_SERVER_DIR/initdb.log" 2>&1 \
        || { cat "$EL_SERVER_DIR/initdb.log"; el_die "initdb failed"; }
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$EL_SERVER_DIR'"
        echo "port = $PGPORT"
        cat "$conf"
    } | el_as_postgres tee -a "$EL_SERVER_DIR/data/postgresql.conf" >/dev/null
    el_as_postgres pg_ctl -D "$EL_SERVER_DIR/data" -l "$EL_SERVER_LOG" -w -t 60 start \
        >/dev/null || { cat "$EL_SERVER_LOG"; el_die "server did not start"; }
    export PGHOST=$EL_SERVER_DIR PGPORT PGUSER=postgres PGDATABASE=postgres
    export EL_SERVER_DIR EL_SERVER_LOG
}

el_stop_server() {
    [ -n "${EL_SERVER_DIR:-}" ] || return 0
    el_as_postgres pg_ctl -D "$EL_SERVER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$EL_SERVER_DIR"
    EL_SERVER_DIR=
}
