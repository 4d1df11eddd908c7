// Package kind names the store kinds: a leaf (nothing but the standard library) that every layer
// may import — the catalog, the workflows' inputs, the clients — so a kind travels as its own
// type from the HTTP route to the activity, never as a bare string re-parsed along the way.
package kind

import "fmt"

// Kind is the type of a store: it fixes the schema family and the HTTP routes that serve it. Its
// JSON and text forms are its name.
type Kind string

const (
	Rollout Kind = "rollout"
	Generic Kind = "generic"
	Datagen Kind = "datagen"
	Context Kind = "context"
)

// All lists every kind, in a stable order.
var All = []Kind{Rollout, Generic, Datagen, Context}

// Parse returns the kind named s.
func Parse(s string) (Kind, error) {
	k := Kind(s)
	if !k.Valid() {
		return "", fmt.Errorf("unknown store kind %q (want one of rollout, generic, datagen, context)", s)
	}
	return k, nil
}

// Valid reports whether k is one of All (a value decoded from outside may be anything).
func (k Kind) Valid() bool {
	switch k {
	case Rollout, Generic, Datagen, Context:
		return true
	}
	return false
}

func (k Kind) String() string { return string(k) }
