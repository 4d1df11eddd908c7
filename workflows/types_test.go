package workflows_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/strata-store/strata/internal/compaction"
	"github.com/strata-store/strata/workflows"
)

// A request's compaction overrides are its own JSON members (histories recorded before they
// were grouped replay unchanged), and a request decodes from them.
func TestARequestsOverridesAreItsOwnMembers(t *testing.T) {
	r := workflows.Request{Op: workflows.OpCompact, Overrides: compaction.Overrides{TargetRowsPerFragment: 10, KeepDeletions: true,
		MinFragments: 2, EverySmallFragment: true}}
	data, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"op":"compact","target_rows_per_fragment":10,"keep_deletions":true,"min_fragments":2,"every_small_fragment":true}`, string(data))
	var back workflows.Request
	require.NoError(t, json.Unmarshal([]byte(`{"op":"compact","min_fragments":3,"every_small_fragment":true}`), &back))
	require.Equal(t, workflows.Request{Op: workflows.OpCompact, Overrides: compaction.Overrides{MinFragments: 3, EverySmallFragment: true}}, back)
}
