package admin

import (
	"net/http"

	"github.com/hibiken/asynqmon"
	"github.com/redis/go-redis/v9"
)

// queueMonitor returns asynqmon at /admin/queues, read-only: its API
// refuses every method but GET, so no task can be deleted, run, archived or
// cancelled from it.
func queueMonitor(rdb redis.UniversalClient) http.Handler {
	return asynqmon.New(asynqmon.Options{
		RootPath:     "/admin/queues",
		RedisConnOpt: sharedConn{rdb},
		ReadOnly:     true,
	})
}

// sharedConn hands asynqmon the process's Redis client instead of a new
// connection pool. asynqmon closes its client only in its Close, which is
// never called: the client's owner closes it.
type sharedConn struct{ rdb redis.UniversalClient }

// MakeRedisClient returns the shared client (asynq.RedisConnOpt).
func (c sharedConn) MakeRedisClient() any { return c.rdb }
