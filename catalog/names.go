// Store kinds and store-name rules. Names become path segments on the object store, so they are
// validated here, before anything is created, and again by the database CHECK constraint.
package catalog

import (
	"fmt"
	"strings"

	"github.com/strata-store/strata/kinds/kind"
)

// Kind is a store's kind (package kinds/kind, a leaf every layer imports); the catalog's names
// for it and its values are that package's.
type Kind = kind.Kind

const (
	KindRollout = kind.Rollout
	KindGeneric = kind.Generic
	KindDatagen = kind.Datagen
	KindContext = kind.Context
)

// Kinds lists every store kind, in a stable order.
var Kinds = kind.All

// ParseKind returns the Kind named s, or an ErrInvalid error.
func ParseKind(s string) (Kind, error) {
	k, err := kind.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return k, nil
}

// MaxNameLength is the longest store name accepted.
const MaxNameLength = 128

func isNameByte(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		return true
	case c == '.' || c == '-':
		return !first
	}
	return false
}

// ValidateName checks a store name: 1-128 characters matching [A-Za-z0-9_][A-Za-z0-9._-]*, not
// starting with '_' (reserved for Strata's own tables). Such a name is always one portable path
// segment: no '/', '\\', "..", or leading '.'.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: store name is empty", ErrInvalid)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: store name is %d characters long; the limit is %d", ErrInvalid, len(name), MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i], i == 0) {
			return fmt.Errorf("%w: store name %q must match [A-Za-z0-9_][A-Za-z0-9._-]* (bad character %q at %d)", ErrInvalid, name, name[i], i)
		}
	}
	if strings.HasPrefix(name, "_") {
		return fmt.Errorf("%w: store name %q is reserved (names starting with '_' belong to Strata)", ErrInvalid, name)
	}
	return nil
}

// validatePrefix checks a List prefix: empty, or a string every valid name could start with.
func validatePrefix(prefix string) error {
	if len(prefix) > MaxNameLength {
		return fmt.Errorf("%w: prefix is longer than %d characters", ErrInvalid, MaxNameLength)
	}
	for i := 0; i < len(prefix); i++ {
		if !isNameByte(prefix[i], i == 0) {
			return fmt.Errorf("%w: prefix %q contains a character no store name has (%q at %d)", ErrInvalid, prefix, prefix[i], i)
		}
	}
	return nil
}
