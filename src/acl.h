/*-------------------------------------------------------------------------
 *
 * acl.h
 *	  Topic privileges (acl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_ACL_H
#define PG_EVENTLOG_ACL_H

#include "topic.h"

typedef enum ElPrivilege
{
	EL_PRIV_PRODUCE,
	EL_PRIV_CONSUME,
	EL_PRIV_OWNER				/* alter, drop, grant, enforce retention */
} ElPrivilege;

extern Oid	el_caller(void);
extern Oid	el_gate_body(Oid fn_oid, MemoryContext cxt, char **name, int *nargs);
extern bool el_topic_allows(ElTopic *topic, Oid role, ElPrivilege priv);
extern void el_require_topic_privilege(ElTopic *topic, Oid role, ElPrivilege priv);

#endif							/* PG_EVENTLOG_ACL_H */
