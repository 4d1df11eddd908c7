package kind

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKindsParseAndTravelAsTheirNames(t *testing.T) {
	for _, k := range All {
		got, err := Parse(string(k))
		require.NoError(t, err)
		require.Equal(t, k, got)
		data, err := json.Marshal(struct{ Kind Kind }{k})
		require.NoError(t, err)
		require.JSONEq(t, `{"Kind":"`+string(k)+`"}`, string(data))
	}
	for _, bad := range []string{"", "Rollout", "rollouts", "context "} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
		require.False(t, Kind(bad).Valid())
	}
}
