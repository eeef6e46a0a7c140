/*-------------------------------------------------------------------------
 *
 * group.h
 *	  Consumer groups in C: the transactional poll (group.c), members' polls,
 *	  the rebalance and commit (group_member.c), and the group tables they
 *	  read (group_scan.c) and write (group_store.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_GROUP_H
#define PG_EVENTLOG_GROUP_H

#include "datatype/timestamp.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/tuplestore.h"

#include "read.h"

/* Group and member names: 1 to 200 characters. */
#define EL_GROUP_NAME_MAX 200

/* group_catalog.start_from and auto_reset ("none": NULL, no row). */
typedef enum ElGroupFrom
{
	EL_FROM_NONE,
	EL_FROM_EARLIEST,
	EL_FROM_LATEST
} ElGroupFrom;

/* A group's settings: what group_catalog says, or the defaults. */
typedef struct ElGroupSettings
{
	ElGroupFrom start_from;		/* EL_FROM_NONE without a row: earliest */
	ElGroupFrom auto_reset;		/* EL_FROM_NONE: lost records are an error */
} ElGroupSettings;

/* One row of group_offsets. */
typedef struct ElGroupRow
{
	ItemPointerData tid;		/* the version read (index scans only) */
	int32		partition;
	int64		next_offset;
	bool		has_fetch;
	int64		fetch_offset;
	char	   *owner;			/* owner_member, NULL if none */
	int64		generation;
} ElGroupRow;

/* One row of group_members. */
typedef struct ElGroupMember
{
	char	   *member;
	TimestampTz last_heartbeat;
	Interval	session_timeout;
	char	   *session;		/* NULL if none */
} ElGroupMember;

/* A partition's new position (or fetch position, or assignment). */
typedef struct ElGroupMove
{
	int32		partition;
	int64		offset;
	ItemPointerData tid;		/* positions: the row version read under the
								 * partition's lock, if any (else invalid) */
	char	   *owner;			/* assignments only: NULL to release */
	int64		bumps;			/* assignments only: generation increments */
} ElGroupMove;

/* group_scan.c: reads, with the snapshot given */
extern void el_group_statement_snapshot_push(void);
extern AttrNumber el_group_attnum(Relation rel, const char *name);
extern int	el_group_rows(int32 topic_id, const char *group, Snapshot snapshot,
						  ElGroupRow **rows);
extern bool el_group_row(int32 topic_id, const char *group, int32 partition,
						 Snapshot snapshot, ElGroupRow *row);
extern int	el_group_members(int32 topic_id, const char *group,
							 Snapshot snapshot, ElGroupMember **members);
extern bool el_group_member(int32 topic_id, const char *group,
							const char *member, Snapshot snapshot,
							ElGroupMember *out);
extern void el_group_settings(int32 topic_id, const char *group,
							  Snapshot snapshot, ElGroupSettings *out);
extern bool el_group_exists(int32 topic_id, const char *group,
							Snapshot snapshot);
extern bool el_group_has_members(int32 topic_id, const char *group,
								 Snapshot snapshot);

/* group_store.c: writes, one statement each, whatever the partition count */
extern void el_group_store_positions(int32 topic_id, const char *group,
									 int nmoves, ElGroupMove *moves);
extern void el_group_store_fetch_positions(int32 topic_id, const char *group,
										   int nmoves, const ElGroupMove *moves);
extern void el_group_add_rows(int32 topic_id, const char *group,
							  int nmoves, const ElGroupMove *moves);
extern void el_group_assign(int32 topic_id, const char *group,
							int nmoves, const ElGroupMove *moves);
extern void el_group_expire_members(int32 topic_id, const char *group);
extern void el_group_heartbeat(int32 topic_id, const char *group,
							   const char *member, Interval *session_timeout,
							   const char *session);
extern void el_group_forget_fetch(int32 topic_id, const char *group,
								  const char *member);
extern bool el_group_lock_row(int32 topic_id, const char *group,
							  int32 partition, ElGroupRow *row);
extern void el_group_commit_row(int32 topic_id, const char *group,
								int32 partition, int64 offset, text *metadata);
extern int	el_group_commit_fetched(int32 topic_id, const char *group,
									const char *member, text *metadata,
									ElGroupMove **moves);

/* group.c: what the transactional and the member poll share */
extern int32 el_group_authorize(FunctionCallInfo fcinfo, text **name);
extern char *el_group_name_arg(FunctionCallInfo fcinfo, int argno);
extern void el_check_member_name(text *member);
extern int	el_interval_cmp(Interval *a, Interval *b);
extern long el_interval_ms(Interval *iv);
extern int64 el_group_lock_key(int32 topic_id, const char *group,
							   int32 partition);
extern void el_group_lock(int32 topic_id, const char *group, bool shared);
extern void el_group_lock_checked(int32 topic_id, const char *topic,
								  const char *group, bool shared);
extern bool el_group_exists_latest(int32 topic_id, const char *group);
extern ElTopic *el_group_topic(text *name, int32 topic_id);
extern void el_group_point(text *name, int32 topic_id, int32 partition,
						   ElReadPoint *point);
extern int64 el_group_checked_position(ElReadPoint *point, const char *group,
									   int64 pos, ElGroupFrom auto_reset);
extern int64 el_group_read(ElReadPoint *point, int64 pos, int32 *remaining,
						   Tuplestorestate *store, TupleDesc tupdesc);
extern bool el_group_await(text *topic, int n, const int32 *partitions,
						   const int64 *positions, long wait_ms);

/* group_member.c */
extern void el_group_poll_member(text *topic, int32 topic_id,
								 const char *group, text *member,
								 int32 max_records, Interval *session_timeout,
								 Interval *wait, Tuplestorestate *store,
								 TupleDesc tupdesc);
extern void el_group_rebalance(text *topic, int32 topic_id, const char *group);

#endif							/* PG_EVENTLOG_GROUP_H */
