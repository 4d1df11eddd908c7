// Package kinds is what each store kind means, in one place: its table schema (fixed, or declared
// at creation), its key column and the columns that hold JSON. The API, the open-store cache and
// the CLI ask here instead of switching on the kind themselves.
package kinds

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/strata-store/strata/catalog"
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
}

var served = map[catalog.Kind]*Kind{
	catalog.KindRollout: {Name: catalog.KindRollout, Schema: func(json.RawMessage) (*arrow.Schema, error) { return RolloutSchema, nil },
		JSONColumns: RolloutJSONColumns, KeyColumn: KeyColumn},
	catalog.KindGeneric: {Name: catalog.KindGeneric, Schema: ParseSchemaSpec, JSONColumns: map[string]bool{}, KeyColumn: KeyColumn},
	catalog.KindDatagen: {Name: catalog.KindDatagen, Schema: func(json.RawMessage) (*arrow.Schema, error) { return DatagenSchema, nil },
		JSONColumns: map[string]bool{}, KeyColumn: DatagenKeyColumn},
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
