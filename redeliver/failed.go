package redeliver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/agentfix/agentfix/ghapp"
)

// Deliveries is what a sweep needs of GitHub; *ghapp.App implements it.
type Deliveries interface {
	// ListHookDeliveries returns the App's webhook deliveries made at or
	// after since.
	ListHookDeliveries(ctx context.Context, since time.Time) ([]ghapp.HookDelivery, error)
	// RedeliverHookDelivery asks GitHub to deliver delivery id again.
	RedeliverHookDelivery(ctx context.Context, id int64) error
}

// Failed is a delivery (a GUID) none of whose attempts GitHub saw answered
// with a 2xx.
type Failed struct {
	// GUID is the delivery's X-GitHub-Delivery.
	GUID string
	// Latest is the newest attempt; a redelivery asks for it again.
	Latest ghapp.HookDelivery
	// First is when the first attempt listed was made.
	First time.Time
	// Attempts counts the attempts listed.
	Attempts int
}

// List returns the deliveries made at or after since that failed, oldest
// first, and how many deliveries GitHub listed.
func List(ctx context.Context, gh Deliveries, since time.Time) ([]Failed, int, error) {
	ds, err := gh.ListHookDeliveries(ctx, since)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	failed, _ := failedOf(ds)
	return failed, len(ds), nil
}

// succeeded reports whether GitHub got a 2xx answer to an attempt.
func succeeded(d ghapp.HookDelivery) bool { return d.StatusCode >= 200 && d.StatusCode < 300 }

// failedOf groups deliveries by GUID and returns the GUIDs with no
// successful attempt, oldest first, and the time of the newest successful
// attempt of any delivery (zero when none succeeded).
func failedOf(ds []ghapp.HookDelivery) (failed []Failed, lastOK time.Time) {
	type group struct {
		Failed
		ok bool
	}
	groups := map[string]*group{}
	for _, d := range ds {
		key := d.GUID
		if key == "" {
			key = "id:" + strconv.FormatInt(d.ID, 10)
		}
		g := groups[key]
		if g == nil {
			g = &group{Failed: Failed{GUID: d.GUID, Latest: d, First: d.DeliveredAt}}
			groups[key] = g
		}
		g.Attempts++
		if succeeded(d) {
			g.ok = true
			if d.DeliveredAt.After(lastOK) {
				lastOK = d.DeliveredAt
			}
		}
		if newer(d, g.Latest) {
			g.Latest = d
		}
		if d.DeliveredAt.Before(g.First) {
			g.First = d.DeliveredAt
		}
	}
	for _, g := range groups {
		if !g.ok {
			failed = append(failed, g.Failed)
		}
	}
	slices.SortFunc(failed, func(a, b Failed) int {
		return cmp.Or(a.First.Compare(b.First), cmp.Compare(a.Latest.ID, b.Latest.ID))
	})
	return failed, lastOK
}

// newer reports whether attempt a was made after b.
func newer(a, b ghapp.HookDelivery) bool {
	if c := a.DeliveredAt.Compare(b.DeliveredAt); c != 0 {
		return c > 0
	}
	return a.ID > b.ID
}
