package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Delivery claims (DESIGN.md §4). A delivery is claimed with SET NX before
// its tasks are enqueued. The claim first lives claimPending: if the process
// dies or Redis fails before the enqueue finished and the claim cannot be
// released, it expires by itself and a redelivery is not lost. Once the
// tasks are in, it is kept for claimKept, GitHub's redelivery window.
const (
	claimPending = 2 * time.Minute
	claimKept    = 72 * time.Hour
)

// claims stores delivery claims in Redis.
type claims struct {
	rdb   redis.UniversalClient
	appID int64
}

func (c claims) key(deliveryID string) string {
	return fmt.Sprintf("agentfix:delivery:%d:%s", c.appID, deliveryID)
}

// claim reports whether this call claimed the delivery (false: another
// request has it or had it).
func (c claims) claim(ctx context.Context, deliveryID string) (bool, error) {
	ok, err := c.rdb.SetNX(ctx, c.key(deliveryID), "pending", claimPending).Result()
	if err != nil {
		return false, fmt.Errorf("claim delivery %s: %w", deliveryID, err)
	}
	return ok, nil
}

// keep marks the delivery handled for claimKept.
func (c claims) keep(ctx context.Context, deliveryID string) error {
	if err := c.rdb.Set(ctx, c.key(deliveryID), "done", claimKept).Err(); err != nil {
		return fmt.Errorf("keep claim of delivery %s: %w", deliveryID, err)
	}
	return nil
}

// release drops the claim so a redelivery is handled.
func (c claims) release(ctx context.Context, deliveryID string) error {
	if err := c.rdb.Del(ctx, c.key(deliveryID)).Err(); err != nil {
		return fmt.Errorf("release claim of delivery %s: %w", deliveryID, err)
	}
	return nil
}
