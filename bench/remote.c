/* remote.c - a baseline's connection, copied for a worker process. */
#include "bench/remote.h"

void remote_reconnect(struct remote *r, const struct remote *proto)
{
	*r = *proto;
	r->c = resp_connect(proto->ep);
}

void remote_close(struct remote *r)
{
	if (r->c != NULL)
		redisFree(r->c);
	r->c = NULL;
}
