/*-------------------------------------------------------------------------
 *
 * topic.h
 *	  Per-backend cache of topic metadata, loaded from the catalog tables
 *	  (topic.c).  Operations on a partition's shared state: partition.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_TOPIC_H
#define PG_EVENTLOG_TOPIC_H

#include "shmem.h"

#define EL_TOPIC_NAME_MAX 200

/*
 * The row type (in the extension's schema, 0.3.0 on) whose relcache
 * invalidation tells every backend that the catalog's rows changed.
 */
#define EL_CATALOG_SIGNAL "catalog_signal"

/*
 * A segment's base offset is unknown (NULL in segment_catalog) while it is
 * a spare not yet active, or between its activation in shared memory and
 * the maintenance round that records it.
 */
#define EL_BASE_UNKNOWN (-1)

/* One segment table of a partition. */
typedef struct ElSegment
{
	int32		segment_no;
	int64		base_offset;	/* first offset it holds, or EL_BASE_UNKNOWN */
	Oid			relid;			/* InvalidOid if the table is missing */
} ElSegment;

typedef struct ElPartitionMeta
{
	int64		log_start_offset;
	int64		offset_floor;
	int			nsegments;
	ElSegment  *segments;		/* ascending segment_no (and offsets) */
	ElSlotRef	ref;			/* shared state: only el_with_partition
								 * (partition.c) touches it */
} ElPartitionMeta;

typedef struct ElTopic
{
	char		name[EL_TOPIC_NAME_MAX + 1];	/* hash key */
	int32		topic_id;
	int32		npartitions;
	bool		binary;			/* topic_catalog.format: 'binary', not 'json' */
	bool		compacted;		/* cleanup_policy 'compact' or 'compact,delete' */
	ElPartitionMeta *parts;
	bool		legacy_acl;		/* a 0.1.0 catalog, not updated yet: no owner */
	Oid			owner;			/* topic_catalog.owner */
	int			nproducers;		/* roles granted produce (InvalidOid: PUBLIC) */
	Oid		   *producers;
	int			nconsumers;		/* roles granted consume (InvalidOid: PUBLIC) */
	Oid		   *consumers;
} ElTopic;

/* Bumped whenever the catalog changes; cached pointers die with it. */
extern uint64 el_cache_generation;

extern void el_topic_cache_init(void);
extern ElTopic *el_topic_lookup(text *name);
extern ElTopic *el_topic_get(text *name);
extern ElTopic *el_topic_recheck(text *name, int32 topic_id, uint64 *drops);
extern bool el_topic_name_valid(const char *name, int len);
extern void el_check_topic_name(const char *name, int len);
extern void el_topic_invalidate(void);
extern void el_watch_catalog(void);
extern Oid	el_segment_schema_oid(void);
extern Oid	el_segment_relid_now(ElTopic *topic, int32 partition, int32 segment_no);
extern void el_check_partition(ElTopic *topic, int32 partition);
extern ElSegment *el_find_segment(ElTopic *topic, int32 partition, int32 segno);
/* What a call refused during recovery was about to do. */
typedef enum ElRecoveryUse
{
	EL_USE_PRODUCE,
	EL_USE_MAINTAIN,
	EL_USE_COUNTER,				/* recover a partition's offset counter */
	EL_USE_GROUP				/* move a consumer group's positions */
} ElRecoveryUse;

extern void el_refuse_in_recovery(ElRecoveryUse use);

/* What a call refused for a topic of the other format was about to do. */
typedef enum ElFormatUse
{
	EL_FORMAT_PRODUCE,
	EL_FORMAT_READ,
	EL_FORMAT_POLL,
	EL_FORMAT_CAPTURE
} ElFormatUse;

extern void el_require_format(ElTopic *topic, bool binary, ElFormatUse use);
extern Oid	el_header_array_type(void);
extern char *el_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname);

#endif							/* PG_EVENTLOG_TOPIC_H */
