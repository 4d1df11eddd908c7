// RecordMaintenanceOutcome: the local activity a store's maintenance workflow runs when an
// operation exhausts its retries or succeeds again after failing. It writes (or clears) the
// store's row of failing maintenance in the catalog, which `strata status` lists, and tells the
// workflow whether the namespace has Strata's search attributes.
package activities

import (
	"context"

	"go.temporal.io/sdk/activity"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/workflows"
)

// RecordOutcome records in.Failure for the store's operation, or clears it when nil. A catalog
// error is logged and not returned: the failure stays visible through the search attributes
// and the workflow's history, and the next outcome writes the row again.
func (a *Activities) RecordOutcome(ctx context.Context, in workflows.OutcomeInput) (workflows.OutcomeResult, error) {
	res := workflows.OutcomeResult{SearchAttributes: a.SearchAttributes}
	cat := a.Stores.Catalog()
	kind := in.Store.Kind
	var err error
	if f := in.Failure; f != nil {
		err = cat.RecordFailure(ctx, catalog.MaintenanceFailure{Kind: kind, Name: in.Store.Name, Op: string(in.Op),
			ErrorType: f.ErrorType, Message: f.Message, Since: f.Since, LastAt: f.LastAt, Failures: f.Count})
	} else {
		err = cat.ClearFailure(ctx, kind, in.Store.Name, string(in.Op))
	}
	if err != nil {
		activity.GetLogger(ctx).Warn("recording a maintenance outcome in the catalog failed", "kind", in.Store.Kind, "name", in.Store.Name,
			"op", in.Op, "err", err)
	}
	return res, nil
}
