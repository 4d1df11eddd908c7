// Strata's custom search attributes (StrataFailing, StrataLastError), registered on the worker's
// namespace at start so store workflows can set them and the Temporal UI's workflow list can
// filter on them. Registering is idempotent; a namespace that refuses (no operator permission)
// leaves the workflows without them, and they say so in their logs.
package worker

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/workflows"
)

// searchAttributes are Strata's custom search attributes and their types.
var searchAttributes = map[string]enumspb.IndexedValueType{
	workflows.SearchAttrFailing:   enumspb.INDEXED_VALUE_TYPE_BOOL,
	workflows.SearchAttrLastError: enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// EnsureSearchAttributes registers the search attributes on namespace unless they exist.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %s: %w", namespace, err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range searchAttributes {
		got, ok := have.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = typ
		case got != typ:
			return fmt.Errorf("search attribute %s exists on namespace %s as %s, want %s", name, namespace, got, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing})
	if err != nil {
		return fmt.Errorf("register search attributes on namespace %s: %w", namespace, err)
	}
	return nil
}
