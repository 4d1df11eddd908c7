// Key-only listings: a caller that needs only the keys under a prefix (the shard heads a read
// lists) asks ListAllKeys, which a store answers without a stat per object when it can (a local
// disk: one directory read); any other store answers through List.
package objstore

import (
	"context"
	"fmt"
)

// KeyLister is implemented by stores (and the wrappers that forward it) that list keys more
// cheaply than objects. ListAllKeys returns every key under prefix in key order, at most
// MaxListObjects of them.
type KeyLister interface {
	ListAllKeys(ctx context.Context, prefix string) ([]string, error)
}

// ListAllKeys returns every key under prefix in key order: through s's own ListAllKeys when it
// has one, else from ListAll.
func ListAllKeys(ctx context.Context, s Store, prefix string) ([]string, error) {
	if kl, ok := s.(KeyLister); ok {
		return kl.ListAllKeys(ctx, prefix)
	}
	objs, err := ListAll(ctx, s, prefix)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, nil
}

// tooManyKeys is ListAll's error for a listing past MaxListObjects.
func tooManyKeys(prefix string) error {
	return fmt.Errorf("objstore: listing %q: more than %d objects: %w", prefix, MaxListObjects, ErrUnavailable)
}
