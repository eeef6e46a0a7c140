/*-------------------------------------------------------------------------
 *
 * api_unsupported.c
 *	  Why an API the gateway does not implement is missing, for the log
 *	  line of a client that sends it anyway.
 *
 * The transaction APIs (issue 16 part 2) are not advertised at all,
 * rather than advertised and answered with an error: every client checks
 * ApiVersions first and then fails at once and clearly, where an error
 * code would be retried (docs/kafka.md gives the evidence).  A request for
 * one anyway closes the connection, as for any unknown API key, with this
 * reason in the log.  InitProducerId is served (api_init_producer_id.c)
 * for idempotent producers.
 *
 *-------------------------------------------------------------------------
 */
#include "server.h"

#include <stddef.h>

const char *
kapi_unsupported_reason(int16_t api_key)
{
	switch (api_key)
	{
		case 24:				/* AddPartitionsToTxn */
		case 25:				/* AddOffsetsToTxn */
		case 26:				/* EndTxn */
		case 28:				/* TxnOffsetCommit */
			return "transactions are not supported yet";
		default:
			return NULL;
	}
}
