/*-------------------------------------------------------------------------
 *
 * api_unsupported.c
 *	  Why an API the gateway does not implement is missing, for the log
 *	  line of a client that sends it anyway.
 *
 * An API that is not advertised at all, rather than advertised and
 * answered with an error (every client checks ApiVersions first and then
 * fails at once and clearly, where an error code would be retried), gets
 * its reason here; a request for one anyway closes the connection, as for
 * any unknown API key, with this reason in the log.  None at present: the
 * transaction APIs are served (api_txn.c).
 *
 *-------------------------------------------------------------------------
 */
#include "server.h"

#include <stddef.h>

const char *
kapi_unsupported_reason(int16_t api_key)
{
	(void) api_key;
	return NULL;
}
