/*-------------------------------------------------------------------------
 *
 * dependents.h
 *	  Refusing objects that other roles make depend on a segment table
 *	  (dependents.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_EVENTLOG_DEPENDENTS_H
#define PG_EVENTLOG_DEPENDENTS_H

extern void el_check_new_dependents(void);

#endif							/* PG_EVENTLOG_DEPENDENTS_H */
