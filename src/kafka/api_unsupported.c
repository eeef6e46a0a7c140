/*-------------------------------------------------------------------------
 *
 * api_unsupported.c
 *	  Why an API the gateway does not implement is missing, for the log
 *	  line of a client that sends it anyway.
 *
 * InitProducerId and the transaction APIs (issue 16) are not advertised
 * at all, rather than advertised and answered with an error: every client
 * checks ApiVersions first and then fails at once and clearly (librdkafka:
 * a fatal "Idempotent producer not supported by any of the 1 connected
 * broker(s)"; the Java producer: a fatal UnsupportedVersionException;
 * kafkajs: KafkaJSServerDoesNotSupportApiKey), while an error code in an
 * advertised InitProducerId makes librdkafka retry forever unless it is an
 * authorization error, which would say the wrong thing (docs/kafka.md
 * gives the evidence).  A request for one anyway closes the connection, as
 * for any unknown API key, with this reason in the log.
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
		case 22:				/* InitProducerId */
			return "InitProducerId is not supported yet: idempotent and transactional producers need it (set enable.idempotence=false)";
		case 24:				/* AddPartitionsToTxn */
		case 25:				/* AddOffsetsToTxn */
		case 26:				/* EndTxn */
		case 28:				/* TxnOffsetCommit */
			return "transactions are not supported yet";
		default:
			return NULL;
	}
}
