/*-------------------------------------------------------------------------
 *
 * capture_batch.c
 *	  Change capture produces a statement's changes in batches.  The row
 *	  trigger (capture.c) hands each change here with its envelope built
 *	  and its checks made; the changes are produced together, grouped by
 *	  partition, once the statement's row triggers have fired.
 *
 * Producing each change as its trigger fired cost an offset allocation, a
 * segment open, an executor state and one WAL record per row; a batch pays
 * the first three once per partition and inserts with table_multi_insert
 * (one WAL record per page).
 *
 * Order.  Changes are kept in the order their triggers fired, each with a
 * sequence number, and a flush produces all of them, in that order within
 * each partition: offsets follow the order rows changed, as when each
 * change was produced at once (no order across partitions is promised).
 * A flush happens
 *	- after a statement's AFTER triggers have fired (ExecutorFinish), if
 *	  the statement, or one it ran, captured something: a statement that
 *	  captured nothing, a foreign key's check run by a trigger say, leaves
 *	  the batch of the statement that ran it alone;
 *	- after a utility statement (COPY FROM fires row triggers outside the
 *	  executor; utility.c calls el_capture_flush);
 *	- before an eventlog function acts on a topic (el_topic_lookup), so
 *	  that a record a trigger produces follows the changes captured before
 *	  it, and a trigger that reads the topic sees them;
 *	- when the buffer holds EL_CAPTURE_FLUSH_ROWS changes or
 *	  EL_CAPTURE_FLUSH_BYTES bytes, so that a huge statement's memory stays
 *	  bounded;
 *	- at the latest, before the transaction commits or prepares (an
 *	  ALWAYS trigger fired by logical replication's apply, which runs no
 *	  executor hook).
 * The checks a produce call makes before it takes an offset (topic,
 * privilege, record size, read-only transaction) are made when a change is
 * captured (el_produce_route), so that a statement fails at the row it
 * always failed at; the privilege is checked again at the flush, for the
 * role that captured each change.
 *
 * Subtransactions.  A change must be produced in the subtransaction that
 * made it or in an ancestor, never in a descendant that could roll back
 * without it.  A flush produces everything buffered, in the current
 * subtransaction; it may hold changes captured in an ancestor (a trigger
 * that opens an exception block runs a statement while the changes of the
 * statement that fired it wait).  Those are kept aside ("owed"): should
 * the subtransaction roll back, taking their records with it, they go back
 * into the buffer, in order, to be produced again; should it commit, its
 * parent takes over the debt.  A subtransaction that rolls back also drops
 * the changes it captured and did not produce; those it produced roll back
 * with it.  Subtransactions nest in time, so "captured in this
 * subtransaction or a descendant" is "sequence number at least the one
 * when the subtransaction started" (el_level_start).
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xact.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "capture.h"
#include "segment.h"

/* Flush the buffer once it holds this many changes, or this many bytes. */
#define EL_CAPTURE_FLUSH_ROWS	1000
#define EL_CAPTURE_FLUSH_BYTES	(8 * 1024 * 1024)

/*
 * One captured change, in one allocation: the topic name, key and value
 * follow the struct.
 */
typedef struct ElChange
{
	uint64		seq;			/* order of capture in the transaction */
	int			exec_level;		/* executor nesting when captured */
	int			nest_level;		/* owed ones: the subtransaction level
								 * whose rollback would undo their records */
	Oid			userid;			/* the role that captured it */
	int32		partition;
	int32		topic_id;		/* the topic's, when captured */
	text	   *topic;
	ElRecordIn	rec;
	Size		size;			/* of the allocation */
} ElChange;

/*
 * Changes not produced yet, in capture order, in el_pending_cxt.  Its
 * first block holds a typical batch and is kept when the context is reset
 * after a flush, so that a big statement's batches reuse the same memory
 * (allocating and freeing it batch after batch cost page faults); the
 * context goes at the end of the transaction.
 */
#define EL_PENDING_BLOCK	(1024 * 1024)
static MemoryContext el_pending_cxt = NULL;
static ElChange **el_pending = NULL;
static int	el_npending = 0;
static int	el_pending_alloc = 0;
static Size el_pending_bytes = 0;
static int	el_pending_max_level = -1;	/* largest exec_level among them */

/* Changes produced for an ancestor subtransaction, in el_owed_cxt. */
static MemoryContext el_owed_cxt = NULL;
static List *el_owed = NIL;

/* The next change's sequence number; and each open level's first. */
static uint64 el_next_seq = 0;
static uint64 *el_level_starts = NULL;
static int	el_level_starts_alloc = 0;

static bool el_flushing = false;
static MemoryContext el_flush_cxt = NULL;

/* How many ExecutorFinish calls are under way (statements nest). */
static int	el_exec_level = 0;

static ExecutorFinish_hook_type prev_ExecutorFinish = NULL;

/*
 * The sequence number of the first change captured in the subtransaction
 * at nesting level "level" or its descendants.  The top level starts at 0,
 * and so does a level opened before the library was loaded, which captured
 * nothing before then.
 */
static uint64
el_level_start(int level)
{
	if (level <= 1 || level >= el_level_starts_alloc)
		return 0;
	return el_level_starts[level];
}

static void
el_set_level_start(int level, uint64 seq)
{
	if (level >= el_level_starts_alloc)
	{
		int			n = Max(16, level * 2);

		if (el_level_starts == NULL)
			el_level_starts = MemoryContextAllocZero(TopMemoryContext, sizeof(uint64) * n);
		else
		{
			el_level_starts = repalloc(el_level_starts, sizeof(uint64) * n);
			memset(el_level_starts + el_level_starts_alloc, 0,
				   sizeof(uint64) * (n - el_level_starts_alloc));
		}
		el_level_starts_alloc = n;
	}
	el_level_starts[level] = seq;
}

/* A copy of change "c" in "cxt", its pointers into the copy. */
static ElChange *
el_change_copy(const ElChange *c, MemoryContext cxt)
{
	ElChange   *copy = MemoryContextAlloc(cxt, c->size);
	char	   *base = (char *) copy;

	memcpy(copy, c, c->size);
	copy->topic = (text *) (base + ((char *) c->topic - (char *) c));
	copy->rec.key = (text *) (base + ((char *) c->rec.key - (char *) c));
	copy->rec.value = (struct varlena *) (base + ((char *) c->rec.value - (char *) c));
	return copy;
}

static void
el_pending_context(void)
{
	if (el_pending_cxt == NULL)
		el_pending_cxt = AllocSetContextCreate(TopMemoryContext,
											   "pg_eventlog captured changes",
											   EL_PENDING_BLOCK, EL_PENDING_BLOCK,
											   ALLOCSET_DEFAULT_MAXSIZE);
}

/* Add a change to the end of the buffer (sequence order is the caller's). */
static void
el_pending_append(ElChange *c)
{
	if (el_npending >= el_pending_alloc)
	{
		int			n = Max(64, el_pending_alloc * 2);

		if (el_pending == NULL)
			el_pending = MemoryContextAlloc(el_pending_cxt, sizeof(ElChange *) * n);
		else
			el_pending = repalloc(el_pending, sizeof(ElChange *) * n);
		el_pending_alloc = n;
	}
	el_pending[el_npending++] = c;
	el_pending_bytes += c->size;
	el_pending_max_level = Max(el_pending_max_level, c->exec_level);
}

static void
el_pending_reset(void)
{
	el_pending = NULL;
	el_npending = 0;
	el_pending_alloc = 0;
	el_pending_bytes = 0;
	el_pending_max_level = -1;
	if (el_pending_cxt != NULL)
		MemoryContextReset(el_pending_cxt);
}

/*
 * Buffer one change of "cap"'s table, from row "before" to row "after"
 * (either NULL), under "key": its envelope built now (its times and WAL
 * position are the change's), after the checks a produce call would make.
 */
void
el_capture_change(ElCapture *cap, char op, HeapTuple before, HeapTuple after,
				  text *key, bool snapshot)
{
	ElRecordIn	rec;
	int32		partition;
	int32		topic_id;
	Size		head = MAXALIGN(sizeof(ElChange));
	Size		topic_size = MAXALIGN(VARSIZE_ANY(cap->topic));
	Size		key_size = MAXALIGN(VARSIZE_ANY(key));
	Size		value_size;
	ElChange   *c;
	char	   *p;

	memset(&rec, 0, sizeof(rec));
	rec.key = key;
	rec.value = (struct varlena *) el_capture_envelope(cap, op, before, after, snapshot);
	partition = el_produce_route(cap->topic, &rec, &topic_id);
	value_size = MAXALIGN(VARSIZE(rec.value));

	el_pending_context();
	c = MemoryContextAlloc(el_pending_cxt, head + topic_size + key_size + value_size);
	p = (char *) c;
	memset(c, 0, sizeof(ElChange));
	c->size = head + topic_size + key_size + value_size;
	c->seq = el_next_seq++;
	c->exec_level = el_exec_level;
	c->userid = GetUserId();
	c->partition = partition;
	c->topic_id = topic_id;
	c->topic = (text *) (p + head);
	memcpy(c->topic, cap->topic, VARSIZE_ANY(cap->topic));
	c->rec.key = (text *) (p + head + topic_size);
	memcpy(c->rec.key, key, VARSIZE_ANY(key));
	c->rec.value = (struct varlena *) (p + head + topic_size + key_size);
	memcpy(c->rec.value, rec.value, VARSIZE(rec.value));
	el_pending_append(c);

	if (el_npending >= EL_CAPTURE_FLUSH_ROWS || el_pending_bytes >= EL_CAPTURE_FLUSH_BYTES)
		el_capture_flush();
}

/* Order of a batch: by topic and partition, then capture order. */
static int
el_change_cmp(const void *a, const void *b)
{
	const ElChange *ca = *(ElChange *const *) a;
	const ElChange *cb = *(ElChange *const *) b;
	int			la = VARSIZE_ANY_EXHDR(ca->topic);
	int			lb = VARSIZE_ANY_EXHDR(cb->topic);
	int			r;

	if (la != lb)
		return la < lb ? -1 : 1;
	r = memcmp(VARDATA_ANY(ca->topic), VARDATA_ANY(cb->topic), la);
	if (r != 0)
		return r;
	if (ca->partition != cb->partition)
		return ca->partition < cb->partition ? -1 : 1;
	if (ca->seq != cb->seq)
		return ca->seq < cb->seq ? -1 : 1;
	return 0;
}

/*
 * Produce changes[0..n), all captured by one role, one batch per
 * partition, in capture order within each.
 */
static void
el_produce_run(ElChange **changes, int n)
{
	ElChange  **sorted = palloc(sizeof(ElChange *) * n);
	ElRecordIn *recs = palloc(sizeof(ElRecordIn) * n);
	int			i = 0;

	memcpy(sorted, changes, sizeof(ElChange *) * n);
	qsort(sorted, n, sizeof(ElChange *), el_change_cmp);
	while (i < n)
	{
		int			j = i;

		while (j < n && sorted[j]->partition == sorted[i]->partition &&
			   sorted[j]->topic_id == sorted[i]->topic_id &&
			   VARSIZE_ANY(sorted[j]->topic) == VARSIZE_ANY(sorted[i]->topic) &&
			   memcmp(sorted[j]->topic, sorted[i]->topic, VARSIZE_ANY(sorted[i]->topic)) == 0)
		{
			recs[j - i] = sorted[j]->rec;
			j++;
		}
		el_produce_to_partition(sorted[i]->topic, sorted[i]->topic_id,
								sorted[i]->partition, recs, j - i,
								sorted[i]->userid);
		i = j;
	}
}

/*
 * Produce every change buffered, in runs of changes captured by one role,
 * so that a change is produced with its own role's privilege and after
 * every change captured before it.
 */
static void
el_produce_pending(void)
{
	int			i = 0;

	el_flushing = true;
	PG_TRY();
	{
		while (i < el_npending)
		{
			int			j = i;

			while (j < el_npending && el_pending[j]->userid == el_pending[i]->userid)
				j++;
			el_produce_run(&el_pending[i], j - i);
			i = j;
		}
	}
	PG_FINALLY();
	{
		el_flushing = false;
	}
	PG_END_TRY();
}

/* Produce every change buffered so far (see the top of this file). */
void
el_capture_flush(void)
{
	MemoryContext old;
	int			level;
	uint64		start;
	int			i;

	/* No insert in parallel mode; the next flush point gets them. */
	if (el_npending == 0 || el_flushing || IsInParallelMode())
		return;
	/* Its first block is kept between flushes, as el_pending_cxt's. */
	if (el_flush_cxt == NULL)
		el_flush_cxt = AllocSetContextCreate(TopMemoryContext,
											 "pg_eventlog capture flush",
											 EL_PENDING_BLOCK, EL_PENDING_BLOCK,
											 ALLOCSET_DEFAULT_MAXSIZE);
	old = MemoryContextSwitchTo(el_flush_cxt);
	el_produce_pending();
	MemoryContextSwitchTo(old);
	MemoryContextReset(el_flush_cxt);

	/*
	 * Changes captured before this subtransaction began were produced in
	 * it: owed to an ancestor, should this subtransaction roll back.
	 */
	level = GetCurrentTransactionNestLevel();
	start = el_level_start(level);
	for (i = 0; i < el_npending && el_pending[i]->seq < start; i++)
	{
		ElChange   *c;

		if (el_owed_cxt == NULL)
			el_owed_cxt = AllocSetContextCreate(TopMemoryContext,
												"pg_eventlog changes owed",
												ALLOCSET_DEFAULT_SIZES);
		c = el_change_copy(el_pending[i], el_owed_cxt);
		c->nest_level = level;
		old = MemoryContextSwitchTo(el_owed_cxt);
		el_owed = lappend(el_owed, c);
		MemoryContextSwitchTo(old);
	}
	el_pending_reset();
}

static int
el_seq_cmp(const void *a, const void *b)
{
	uint64		sa = (*(ElChange *const *) a)->seq;
	uint64		sb = (*(ElChange *const *) b)->seq;

	return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/*
 * The subtransaction at "level" rolls back: drop the changes it captured,
 * and take back those it produced for its ancestors, whose records its
 * rollback undoes.
 */
static void
el_capture_subxact_abort(int level)
{
	uint64		start = el_level_start(level);
	ListCell   *lc;
	bool		restored = false;

	while (el_npending > 0 && el_pending[el_npending - 1]->seq >= start)
	{
		el_npending--;
		el_pending_bytes -= el_pending[el_npending]->size;
	}
	foreach(lc, el_owed)
	{
		ElChange   *c = lfirst(lc);

		if (c->nest_level < level)
			continue;
		el_pending_context();
		el_pending_append(el_change_copy(c, el_pending_cxt));
		el_owed = foreach_delete_current(el_owed, lc);
		pfree(c);
		restored = true;
	}
	if (restored)
		qsort(el_pending, el_npending, sizeof(ElChange *), el_seq_cmp);
	if (el_npending == 0)
		el_pending_reset();
	if (el_owed == NIL && el_owed_cxt != NULL)
		MemoryContextReset(el_owed_cxt);
}

/*
 * The subtransaction at "level" commits into its parent: what it owed is
 * now owed by the parent, unless the parent (or a descendant of it)
 * captured the change itself, whose records then share its fate.
 */
static void
el_capture_subxact_commit(int level)
{
	uint64		parent_start = el_level_start(level - 1);
	ListCell   *lc;

	foreach(lc, el_owed)
	{
		ElChange   *c = lfirst(lc);

		if (c->nest_level < level)
			continue;
		if (c->seq >= parent_start)
		{
			el_owed = foreach_delete_current(el_owed, lc);
			pfree(c);
		}
		else
			c->nest_level = level - 1;
	}
	if (el_owed == NIL && el_owed_cxt != NULL)
		MemoryContextReset(el_owed_cxt);
}

static void
el_capture_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	switch (event)
	{
		case SUBXACT_EVENT_START_SUB:
			el_set_level_start(level, el_next_seq);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			el_capture_subxact_commit(level);
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			el_flushing = false;
			el_capture_subxact_abort(level);
			break;
		default:
			break;
	}
}

/*
 * The transaction ends: forget everything, and give the memory back (the
 * contexts keep a block between the batches of a transaction, not for the
 * rest of the session).
 */
static void
el_capture_reset(void)
{
	el_pending_reset();
	el_owed = NIL;
	if (el_owed_cxt != NULL)
		MemoryContextReset(el_owed_cxt);
	el_next_seq = 0;
	el_flushing = false;
	if (el_pending_cxt != NULL)
	{
		MemoryContextDelete(el_pending_cxt);
		el_pending_cxt = NULL;
	}
	if (el_flush_cxt != NULL)
	{
		MemoryContextDelete(el_flush_cxt);
		el_flush_cxt = NULL;
	}
}

static void
el_capture_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			if (el_npending > 0)
			{
				bool		pushed = false;

				if (!ActiveSnapshotSet())
				{
					PushActiveSnapshot(GetTransactionSnapshot());
					pushed = true;
				}
				el_capture_flush();
				if (pushed)
					PopActiveSnapshot();
			}
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			el_capture_reset();
			break;
		default:
			break;
	}
}

/*
 * After a statement's AFTER triggers have fired: produce what it, or a
 * statement it ran, captured.
 */
static void
el_capture_executor_finish(QueryDesc *queryDesc)
{
	el_exec_level++;
	PG_TRY();
	{
		if (prev_ExecutorFinish)
			prev_ExecutorFinish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
	}
	PG_FINALLY();
	{
		el_exec_level--;
	}
	PG_END_TRY();
	if (el_npending > 0 && el_pending_max_level > el_exec_level)
		el_capture_flush();
}

void
el_capture_batch_init(void)
{
	prev_ExecutorFinish = ExecutorFinish_hook;
	ExecutorFinish_hook = el_capture_executor_finish;
	/* Registered after shmem.c's: called before it, at PREPARE too. */
	RegisterXactCallback(el_capture_xact_callback, NULL);
	RegisterSubXactCallback(el_capture_subxact_callback, NULL);
}
