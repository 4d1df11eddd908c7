// Seal notifications: a worker that seals rows of a store tells every other worker (PostgreSQL
// NOTIFY on one channel, the payload "kind/name"), so change-feed long polls waiting on that store
// look at once instead of at their next poll. Notifications are hints: one lost (a connection
// that broke) only delays a poll until its interval.
package catalog

import (
	"context"
	"strings"
)

// sealChannel is the NOTIFY channel of seals.
const sealChannel = "strata_sealed"

// NotifySealed tells the workers listening that rows of the store were sealed.
func (c *Catalog) NotifySealed(ctx context.Context, kind Kind, name string) error {
	if _, err := c.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, sealChannel, string(kind)+"/"+name); err != nil {
		return errorf("catalog: notify a seal of %s/%s: %w", kind, name, err)
	}
	return nil
}

// ListenSealed calls fn with every seal notification until ctx ends or the connection fails (the
// error; the caller listens again). It holds one pooled connection while it listens.
func (c *Catalog) ListenSealed(ctx context.Context, fn func(kind Kind, name string)) error {
	pooled, err := c.pool.Acquire(ctx)
	if err != nil {
		return errorf("catalog: listen for seals: %w", err)
	}
	// A session that LISTENs is no use to others: it leaves the pool and is closed at the end.
	conn := pooled.Hijack()
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "LISTEN "+sealChannel); err != nil {
		return errorf("catalog: listen for seals: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if kind, name, ok := strings.Cut(n.Payload, "/"); ok {
			fn(Kind(kind), name)
		}
	}
}
