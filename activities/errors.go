// Error classification: every error a maintenance activity returns leaves it as a Temporal
// application error of one of the stable types in package workflows, with a message that names
// the operation and the store, so the Temporal UI, the StrataLastError search attribute and
// `strata status` say what failed in words an operator acts on (never a Go type name).
package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/workflows"
)

// errorType returns the stable type of err (see package workflows) and words that explain it.
func errorType(err error) (string, string) {
	switch {
	case errors.Is(err, errStalled):
		return workflows.ErrStorageStalled, "no progress"
	case errors.Is(err, lsm.ErrCorrupt):
		return workflows.ErrCorrupt, "corrupt data"
	case catalog.IsUnavailable(err):
		return workflows.ErrCatalogUnavailable, "catalog unavailable"
	case errors.Is(err, lsm.ErrFenced):
		return workflows.ErrFenced, "fenced by another process"
	case errors.Is(err, lsm.ErrOverloaded):
		return workflows.ErrOverloaded, "overloaded"
	case errors.Is(err, table.ErrConflict):
		return workflows.ErrCommitConflict, "commit conflict"
	case objstore.Fault(err) != "":
		return workflows.ErrObjectStoreUnavailable, objstore.Fault(err)
	}
	return workflows.ErrInternal, "internal error"
}

// classify turns an activity's error into an application error of a stable type whose message
// names the operation and the store. Application errors pass through (they are classified
// already); so does the cancellation of the activity itself (the SDK reports it as such).
func classify(ctx context.Context, in workflows.ActivityInput, err error) error {
	if err == nil {
		return nil
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return err
	}
	if ctx.Err() != nil && !errors.Is(err, errStalled) {
		return err
	}
	typ, words := errorType(err)
	msg := fmt.Sprintf("%s %s/%s: %s: %v", in.Request.Op, in.Store.Kind, in.Store.Name, words, err)
	return temporal.NewApplicationErrorWithOptions(msg, typ, temporal.ApplicationErrorOptions{
		NonRetryable: typ == workflows.ErrCorrupt,
	})
}
