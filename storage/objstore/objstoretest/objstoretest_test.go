package objstoretest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/objstore/objstoretest"
)

// The test doubles pass the same suite as the production stores: tests that use them test
// against the contract, not against a looser fake.
func TestTheDoublesPassTheConformanceSuite(t *testing.T) {
	for name, open := range map[string]func() objstore.Store{
		"memory":   func() objstore.Store { return objstoretest.NewMemory() },
		"faulty":   func() objstore.Store { return objstoretest.NewFaulty(objstoretest.NewMemory()) },
		"counting": func() objstore.Store { return objstoretest.NewCounting(objstoretest.NewMemory()) },
	} {
		t.Run(name, func(t *testing.T) {
			objstoretest.Conformance(t, open())
			objstoretest.ExactlyOneWinner(t, open())
		})
	}
}

func TestMemoryURLsNameOneStorePerName(t *testing.T) {
	ctx := context.Background()
	a, err := objstore.Open(ctx, "memory://shared")
	require.NoError(t, err)
	b, err := objstore.Open(ctx, "memory://shared")
	require.NoError(t, err)
	c, err := objstore.Open(ctx, "memory://other")
	require.NoError(t, err)
	require.NoError(t, a.Put(ctx, "k", []byte("v")))
	got, err := b.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	_, err = c.Get(ctx, "k")
	require.ErrorIs(t, err, objstore.ErrNotFound)
}
