// ReleaseSnapshot: the SnapshotLease workflow's activity, at a read token's end — mark it
// released in the catalog (idempotent) and purge tokens that ended more than a day ago.
package activities

import (
	"context"
	"errors"
	"time"

	"github.com/strata-store/strata/catalog"
)

// ReleaseSnapshot marks the token released; a token already purged is not an error.
func (a *Activities) ReleaseSnapshot(ctx context.Context, id string) error {
	cat := a.Stores.Catalog()
	if err := cat.ReleaseSnapshot(ctx, id); err != nil && !errors.Is(err, catalog.ErrNotFound) {
		return err
	}
	_, err := cat.PurgeSnapshots(ctx, time.Now().Add(-24*time.Hour))
	return err
}
