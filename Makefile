# pg_eventlog: build with PGXS.
#
#   make PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
#   make install
#   test/run            # every test suite, see README.md
#
# The current version's install script is built from per-concern files in
# sql/install/ (INSTALL_SOURCES below) to the versioned name.  Scripts of
# released versions (sql/pg_eventlog--X.Y.Z.sql) and upgrade scripts
# (sql/pg_eventlog--A--B.sql) are committed as they shipped.

EXTENSION = pg_eventlog
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(EXTENSION).control)

MODULE_big = pg_eventlog
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))

DATA_built = sql/$(EXTENSION)--$(EXTVERSION).sql
DATA = $(filter-out $(DATA_built),$(wildcard sql/$(EXTENSION)--*.sql))

# pg_regress: sql/NAME.sql against expected/NAME.out, in this order.
REGRESS = $(shell sed -e 's/\#.*//' test/regress_schedule)
REGRESS_OPTS = --load-extension=$(EXTENSION)

# Isolation specs: test/isolation/specs/NAME.spec, expected/NAME.out beside.
ISOLATION = $(shell sed -e 's/\#.*//' test/isolation_schedule)
ISOLATION_OPTS = --inputdir=test/isolation --load-extension=$(EXTENSION)

EXTRA_CLEAN = output_iso results regression.diffs regression.out tmp_check

# Warnings are errors in CI.  PostgreSQL's own headers trip
# -Wunused-parameter, -Wsign-compare and -Wmissing-field-initializers under
# -Wextra, so those three stay warnings-off.  PG_CFLAGS reaches gcc only,
# not the clang that builds LLVM bitcode.
ifdef WERROR
PG_CFLAGS += -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
	-Wno-missing-field-initializers
endif

# Test-only settings (eventlog.debug_*: fault injection that breaks the
# log's guarantees on purpose) exist only in a build for the tests:
# test/run builds with EL_TEST_HOOKS=1; a plain "make" (and test/demo) leaves
# them out.  The choice is recorded in src/.build-flavour, so switching it
# rebuilds every object, and the LLVM bitcode "make install" also installs.
ifdef EL_TEST_HOOKS
PG_CPPFLAGS += -DEL_TEST_HOOKS
endif
EL_BUILD_FLAVOUR = $(if $(EL_TEST_HOOKS),test-hooks,release)
EXTRA_CLEAN += src/.build-flavour

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

ifeq ($(shell test $(VERSION_NUM) -lt 140000 && echo old),old)
$(error pg_eventlog requires PostgreSQL 14 or later; $(PG_CONFIG) reports $(VERSION))
endif

# The Kafka gateway, pg_eventlog_kafka (src/kafka/, docs/kafka.md), is a
# program of its own with its own Makefile, run as a sub-make: PGXS builds
# one kind of thing per Makefile, and this one's is the extension's
# library.  It is installed beside pg_config's other programs ($(bindir));
# DESTDIR and WERROR reach it as command-line variables do.
KAFKA_MAKE = $(MAKE) -C src/kafka CC='$(CC)' PG_INCLUDEDIR='$(includedir)' \
	PG_LIBDIR='$(libdir)' PG_BINDIR='$(bindir)'
all: kafka-gateway
install: kafka-gateway-install
uninstall: kafka-gateway-uninstall
clean: kafka-gateway-clean
kafka-gateway:
	$(KAFKA_MAKE) all
kafka-gateway-install:
	$(KAFKA_MAKE) install
kafka-gateway-uninstall:
	$(KAFKA_MAKE) uninstall
kafka-gateway-clean:
	$(KAFKA_MAKE) clean
.PHONY: kafka-gateway kafka-gateway-install kafka-gateway-uninstall kafka-gateway-clean

# The command-line tool, pg_eventlog (src/cli/, docs/cli.md): a libpq
# program built and installed beside the gateway, the same way.
CLI_MAKE = $(MAKE) -C src/cli CC='$(CC)' PG_INCLUDEDIR='$(includedir)' \
	PG_LIBDIR='$(libdir)' PG_BINDIR='$(bindir)'
all: cli
install: cli-install
uninstall: cli-uninstall
clean: cli-clean
cli:
	$(CLI_MAKE) all
cli-install:
	$(CLI_MAKE) install
cli-uninstall:
	$(CLI_MAKE) uninstall
cli-clean:
	$(CLI_MAKE) clean
.PHONY: cli cli-install cli-uninstall cli-clean

# The install script's sources, in the order CREATE EXTENSION runs them.
# The order matters where a statement names an object when it runs: tables
# and types before the views, SQL-language functions and COMMENTs that use
# them; grants.sql (REVOKEs of internal functions) last.  PL/pgSQL bodies
# are resolved when they run, so they may call functions of a later file.
INSTALL_SOURCES = $(addprefix sql/install/, \
	setup.sql \
	catalog.sql \
	types.sql \
	privileges.sql \
	topics.sql \
	produce_read.sql \
	producers.sql \
	retention.sql \
	compaction.sql \
	groups.sql \
	group_members.sql \
	kafka_groups.sql \
	kafka_fetch.sql \
	views.sql \
	standby.sql \
	kafka_source.sql \
	capture.sql \
	kafka_auth.sql \
	streams.sql \
	streams_join.sql \
	streams_windows.sql \
	grants.sql)

# A file of sql/install/ that is not in the list would silently not be
# installed: refuse to build.
ifneq ($(sort $(INSTALL_SOURCES)),$(sort $(wildcard sql/install/*.sql)))
$(error INSTALL_SOURCES in the Makefile and the files in sql/install/ differ)
endif

$(DATA_built): $(INSTALL_SOURCES) $(EXTENSION).control
	awk 'FNR == 1 && NR > 1 { print "" } { print }' $(INSTALL_SOURCES) > $@

# PGXS does not track header dependencies without --enable-depend: every
# object depends on every header (a rebuild costs seconds).
$(OBJS) $(OBJS:.o=.bc): $(wildcard src/*.h)

src/.build-flavour: el-force
	@echo '$(EL_BUILD_FLAVOUR)' | cmp -s - $@ || echo '$(EL_BUILD_FLAVOUR)' > $@
$(OBJS) $(OBJS:.o=.bc): src/.build-flavour
.PHONY: el-force check-release-build check-messages
el-force:

# A release build must not contain the test-only settings: preprocess every
# source file as a release build would and look for their names (cheap; run
# by test/run, whose own build has them).
check-release-build:
	@found=$$(for f in $(OBJS:.o=.c); do \
		$(CC) -E $(filter-out -DEL_TEST_HOOKS,$(CPPFLAGS)) $$f | grep -l '"eventlog\.debug_' >/dev/null && echo $$f; \
	done); \
	if [ -n "$$found" ]; then echo "test-only settings outside #ifdef EL_TEST_HOOKS in: $$found"; exit 1; fi; \
	echo "release build: no test-only settings"

# Error messages follow PostgreSQL's style guide: no primary message pasted
# together from a verb or a function name ("cannot %s ...", "%s must be
# called ...", "foo() must ...").  A grep over the sources (issue 13, item 20).
check-messages:
	@bad=$$(grep -nE 'errmsg(_plural)?\("[^"]*((cannot|could not|can.t) %s|%s (an|a|the|must be called) |[a-z_.]+\(\))' src/*.c); \
	if [ -n "$$bad" ]; then echo "error messages assembled from fragments or naming functions:"; echo "$$bad"; exit 1; fi; \
	echo "error messages: no fragments, no function names"
