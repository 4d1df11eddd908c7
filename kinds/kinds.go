// Package kinds is what each store kind means, in one place: its table schema (fixed, or declared
// at creation), its key column and the columns that hold JSON. The API, the open-store cache and
// the CLI ask here instead of switching on the kind themselves.
package kinds

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/contexts"
)

// KeyColumn is the key column of the rollout and generic kinds: a non-empty UTF-8 string,
// newest _seq wins. Datagen stores key on DatagenKeyColumn.
const KeyColumn = "id"

// Kind describes one store kind.
type Kind struct {
	Name catalog.Kind
	// Schema is the user schema of a store of this kind, from its declared schema spec (nil for
	// kinds with a fixed schema). Errors wrap catalog.ErrInvalid.
	Schema func(spec json.RawMessage) (*arrow.Schema, error)
	// JSONColumns are the string columns that hold JSON documents (served as JSON values).
	JSONColumns map[string]bool
	// KeyColumn is the table's key column (a non-empty UTF-8 string, newest _seq wins).
	KeyColumn string
	// Route is the kind's collection in the HTTP API: /api/v1/<Route>/<name>.
	Route string
}

var served = map[catalog.Kind]*Kind{
	catalog.KindRollout: {Name: catalog.KindRollout, Schema: func(json.RawMessage) (*arrow.Schema, error) { return RolloutSchema, nil },
		JSONColumns: RolloutJSONColumns, KeyColumn: KeyColumn, Route: "rollouts"},
	catalog.KindGeneric: {Name: catalog.KindGeneric, Schema: ParseSchemaSpec, JSONColumns: map[string]bool{}, KeyColumn: KeyColumn, Route: "generic"},
	catalog.KindDatagen: {Name: catalog.KindDatagen, Schema: func(json.RawMessage) (*arrow.Schema, error) { return DatagenSchema, nil },
		JSONColumns: map[string]bool{}, KeyColumn: DatagenKeyColumn, Route: "datagen"},
	catalog.KindContext: {Name: catalog.KindContext, Schema: func(json.RawMessage) (*arrow.Schema, error) { return contexts.Schema, nil },
		JSONColumns: contexts.JSONColumns, KeyColumn: KeyColumn, Route: "contexts"},
}

// Served is every kind this server serves, in name order.
func Served() []*Kind {
	out := make([]*Kind, 0, len(served))
	for _, k := range served {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b *Kind) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out
}

// Of returns the kind's description, or an error wrapping catalog.ErrInvalid for a kind this
// server does not serve.
func Of(k catalog.Kind) (*Kind, error) {
	if d, ok := served[k]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %s stores are not served yet", catalog.ErrInvalid, k)
}

// SchemaOf is the user schema of a registered store.
func SchemaOf(st catalog.Store) (*arrow.Schema, error) {
	k, err := Of(st.Kind)
	if err != nil {
		return nil, err
	}
	return k.Schema(st.Schema)
}
