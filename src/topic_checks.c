/*-------------------------------------------------------------------------
 *
 * topic_checks.c
 *	  Checks of the topic a call names, before it acts: the name's
 *	  alphabet, a partition number, a text argument that must not be NULL,
 *	  recovery, and the topic's format (JSON or binary) against the
 *	  function called.  Moved out of topic.c, which keeps the cache.
 *
 *-------------------------------------------------------------------------
 */
#include "pg_eventlog.h"

#include "access/xlog.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "topic.h"

/* Whether a topic name is in Kafka's alphabet (the catalog's CHECK). */
bool
el_topic_name_valid(const char *name, int len)
{
	int			i;
	bool		ok = (len >= 1 && len <= EL_TOPIC_NAME_MAX);

	for (i = 0; ok && i < len; i++)
	{
		char		c = name[i];

		ok = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-');
	}
	return ok;
}

/* Validate a topic name argument: 22023 outside Kafka's alphabet. */
void
el_check_topic_name(const char *name, int len)
{
	if (!el_topic_name_valid(name, len))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid topic name \"%.*s\"", Min(len, 210), name),
				 errdetail("A topic name is 1 to 200 characters, each a letter (A-Z, a-z), a digit, \".\", \"_\" or \"-\".")));
}

/*
 * Fetch a text argument that must not be NULL, as a C string.
 */
char *
el_text_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", argname)));
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

void
el_check_partition(ElTopic *topic, int32 partition)
{
	if (partition < 0 || partition >= topic->npartitions)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partition %d of topic \"%s\" does not exist",
						partition, topic->name),
				 errdetail("The topic has %d partitions, numbered 0 to %d.",
						   topic->npartitions, topic->npartitions - 1)));
}

/*
 * Refuse to run during recovery: a hot standby has no in-flight table (it
 * reads up to the stable offset the primary published, standby.c), and
 * cannot write.  One
 * complete message per use, as the error message style guide asks (a verb
 * pasted into a sentence cannot be translated).
 */
void
el_refuse_in_recovery(ElRecoveryUse use)
{
	if (!RecoveryInProgress())
		return;
	switch (use)
	{
		case EL_USE_PRODUCE:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot produce to an event log during recovery"),
					 errdetail("A hot standby does not know which offsets are still in flight on the primary, so it cannot tell which records are stable."),
					 errhint("Connect to the primary.")));
			break;
		case EL_USE_MAINTAIN:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot maintain an event log during recovery"),
					 errdetail("A hot standby does not know which offsets are still in flight on the primary, so it cannot tell which records are stable."),
					 errhint("Connect to the primary; its maintenance worker runs there.")));
			break;
		case EL_USE_COUNTER:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot recover an event log partition's offset counter during recovery"),
					 errdetail("A counter recovered on a hot standby would be stale at promotion."),
					 errhint("Connect to the primary.")));
			break;
		case EL_USE_GROUP:
			ereport(ERROR,
					(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
					 errmsg("cannot move a consumer group's positions on a hot standby"),
					 errdetail("Polls, commits and seeks write the group's positions, and a hot standby cannot write."),
					 errhint("Read on the standby with eventlog.read and store the group's positions on the primary with eventlog.seek.")));
			break;
	}
}

/*
 * Refuse a call made for topics of the other format: 42809, the topic's
 * format being fixed when it is created.  One complete message per case.
 */
void
el_require_format(ElTopic *topic, bool binary, ElFormatUse use)
{
	if (topic->binary == binary)
		return;
	if (topic->binary)
	{
		switch (use)
		{
			case EL_FORMAT_PRODUCE:
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("topic \"%s\" holds binary records", topic->name),
						 errdetail("Its keys and values are bytea and its headers eventlog.header[]."),
						 errhint("Use eventlog.produce_binary or eventlog.produce_binary_batch.")));
				break;
			case EL_FORMAT_READ:
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("topic \"%s\" holds binary records", topic->name),
						 errdetail("Its keys and values are bytea and its headers eventlog.header[]."),
						 errhint("Use eventlog.read_binary.")));
				break;
			case EL_FORMAT_POLL:
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("topic \"%s\" holds binary records", topic->name),
						 errdetail("Its keys and values are bytea and its headers eventlog.header[]."),
						 errhint("Use eventlog.poll_binary.")));
				break;
			case EL_FORMAT_CAPTURE:
				ereport(ERROR,
						(errcode(ERRCODE_WRONG_OBJECT_TYPE),
						 errmsg("topic \"%s\" holds binary records", topic->name),
						 errdetail("Change capture writes JSON change envelopes."),
						 errhint("Capture into a topic created with format 'json'.")));
				break;
		}
	}
	switch (use)
	{
		case EL_FORMAT_PRODUCE:
		case EL_FORMAT_CAPTURE:
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("topic \"%s\" holds JSON records", topic->name),
					 errdetail("Its keys are text and its values and headers jsonb."),
					 errhint("Use eventlog.produce or eventlog.produce_batch.")));
			break;
		case EL_FORMAT_READ:
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("topic \"%s\" holds JSON records", topic->name),
					 errdetail("Its keys are text and its values and headers jsonb."),
					 errhint("Use eventlog.read.")));
			break;
		case EL_FORMAT_POLL:
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("topic \"%s\" holds JSON records", topic->name),
					 errdetail("Its keys are text and its values and headers jsonb."),
					 errhint("Use eventlog.poll.")));
			break;
	}
}
