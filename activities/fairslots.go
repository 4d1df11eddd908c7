// Fair shares of maintenance: every store activity takes one of the worker's activity slots
// (Activities.Slots) before it opens its store, waiting in the process — heartbeating, with
// waiting_for_slot in its details — while every slot is busy. A freed slot goes to the tenant
// with the fewest running activities per unit of weight (package internal/fairshare), so a
// tenant whose stores flood the task queue gets its share of the slots, and of the merge memory
// the running activities hold, not all of them. The worker takes more activity tasks from
// Temporal than it has slots (worker.New), so other tenants' activities are here to be chosen; a
// merge yields its slot between passes to a tenant the share puts first.
package activities

import (
	"context"
	"sync"
	"time"

	"github.com/strata-store/strata/workflows"
)

// weightsRefresh: how often the tenants' weights are re-read from the catalog.
const weightsRefresh = 30 * time.Second

// tenantWeights caches the tenants' quota weights.
type tenantWeights struct {
	mu       sync.Mutex // guards every field below
	loadedAt time.Time
	weights  map[string]int
}

// acquireSlot waits for a slot for store's tenant and returns its release (a no-op without
// Slots); hb keeps the lease, so long work can yield it between steps (yieldSlot).
func (a *Activities) acquireSlot(ctx context.Context, store workflows.StoreRef, hb *heartbeater) (func(), error) {
	if a.Slots == nil {
		return func() {}, nil
	}
	tenant := a.Tenancy.Of(store.Name)
	hb.set(func(d *HeartbeatDetails) { d.WaitingForSlot = true })
	lease, err := a.Slots.Acquire(ctx, tenant, a.weight(ctx, tenant))
	hb.set(func(d *HeartbeatDetails) { d.WaitingForSlot = false })
	if err != nil {
		return nil, err
	}
	hb.slot = lease
	return lease.Release, nil
}

// yieldSlot gives the activity's slot to another tenant's waiting activity that the fair share
// puts first, and waits for one again (heartbeating); without such a waiter it keeps the slot.
// A merge calls it between its passes, so a tenant whose merges hold every slot frees one within
// a pass of another tenant's activity arriving.
func (hb *heartbeater) yieldSlot(ctx context.Context) error {
	if hb.slot == nil {
		return nil
	}
	hb.set(func(d *HeartbeatDetails) { d.WaitingForSlot = true })
	defer hb.set(func(d *HeartbeatDetails) { d.WaitingForSlot = false })
	return hb.slot.Yield(ctx)
}

// weight is tenant's weight (1 without a quota, or when the catalog cannot say).
func (a *Activities) weight(ctx context.Context, tenant string) int {
	w := &a.weights
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Since(w.loadedAt) >= weightsRefresh {
		w.loadedAt = time.Now() // also after a failure: try again a refresh later
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		qs, err := a.Stores.Catalog().TenantQuotas(cctx)
		cancel()
		if err == nil {
			w.weights = make(map[string]int, len(qs))
			for _, q := range qs {
				w.weights[q.Tenant] = q.Weight
			}
		}
	}
	return max(w.weights[tenant], 1)
}
