/*-------------------------------------------------------------------------
 *
 * topic_name.c
 *	  Kafka's rule for a legal topic name (Topic.validate), the one copy
 *	  every handler that takes topic names checks them with (Produce,
 *	  Fetch, ListOffsets, Metadata, the administrative APIs); such a name
 *	  is also safe to quote in an array literal.
 *
 *-------------------------------------------------------------------------
 */
#include "server.h"

bool
kvalid_topic_name(KSlice s)
{
	if (s.len <= 0 || s.len > 249)
		return false;
	if ((s.len == 1 && s.ptr[0] == '.') || (s.len == 2 && s.ptr[0] == '.' && s.ptr[1] == '.'))
		return false;
	for (int i = 0; i < s.len; i++)
	{
		uint8_t		c = s.ptr[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}
