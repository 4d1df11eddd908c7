package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/client"
	"github.com/strata-store/strata/internal/fakemaint"
	"github.com/strata-store/strata/internal/testenv"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/workflows"
)

func TestMain(m *testing.M) { testenv.RunMain(m, testenv.WithLeakCheck(testenv.RunWithPostgres)) }

// server is a real API worker (real PostgreSQL catalog, local data directory) behind httptest.
func server(t *testing.T, mod func(*api.Deps)) string {
	cat, err := catalog.Open(context.Background(), testenv.Database(t))
	require.NoError(t, err)
	t.Cleanup(cat.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	mgr, err := storecache.New(cat, storecache.Config{DataURL: t.TempDir(), Store: lsm.Options{Instance: "w"}}, reg, log)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Close(context.Background()) })
	d := api.Deps{Log: log, Catalog: cat, Stores: mgr, Registry: reg, Version: "test"}
	if mod != nil {
		mod(&d)
	}
	srv := httptest.NewServer(api.New(d))
	t.Cleanup(srv.Close)
	return srv.URL
}

func rows(t *testing.T, objs ...map[string]any) []json.RawMessage {
	out := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		data, err := json.Marshal(o)
		require.NoError(t, err)
		out[i] = data
	}
	return out
}

func TestRolloutStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(server(t, nil))
	require.NoError(t, err)
	h, err := c.Health(ctx)
	require.NoError(t, err)
	require.Equal(t, "test", h.Version)

	_, created, err := c.CreateStore(ctx, client.KindRollout, "run-1", client.CreateOptions{})
	require.NoError(t, err)
	require.True(t, created)
	_, created, err = c.CreateStore(ctx, client.KindRollout, "run-1", client.CreateOptions{})
	require.NoError(t, err)
	require.False(t, created, "the same definition again is not a new store")

	var batch []map[string]any
	for i := range 5 {
		batch = append(batch, map[string]any{"id": fmt.Sprintf("r%d", i), "rollout_id": "t1", "content": fmt.Sprint("step ", i)})
	}
	res, err := c.Append(ctx, client.KindRollout, "run-1", rows(t, batch...), true)
	require.NoError(t, err)
	require.Equal(t, 5, res.Count)

	row, err := c.Get(ctx, client.KindRollout, "run-1", "r3")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(row, &got))
	require.Equal(t, "step 3", got["content"])
	_, err = c.Get(ctx, client.KindRollout, "run-1", "nope")
	require.ErrorIs(t, err, client.ErrRowNotFound)

	var ids []string
	require.NoError(t, c.Scan(ctx, client.KindRollout, "run-1", client.ScanOptions{PageSize: 2}, func(r json.RawMessage) error {
		var m map[string]any
		require.NoError(t, json.Unmarshal(r, &m))
		ids = append(ids, m["id"].(string))
		return nil
	}))
	require.Equal(t, []string{"r0", "r1", "r2", "r3", "r4"}, ids, "pages follow the cursor in key order")
	ids = nil
	require.NoError(t, c.Scan(ctx, client.KindRollout, "run-1", client.ScanOptions{PageSize: 2, Limit: 3}, func(json.RawMessage) error {
		ids = append(ids, "x")
		return nil
	}))
	require.Len(t, ids, 3, "Limit stops the scan")

	var arrowRows int64
	require.NoError(t, c.ScanArrow(ctx, client.KindRollout, "run-1", client.ScanOptions{PageSize: 3}, func(rec arrow.RecordBatch) error {
		arrowRows += rec.NumRows()
		return nil
	}))
	require.EqualValues(t, 5, arrowRows)

	rec := kinds.MinimalRolloutBatch(memory.DefaultAllocator, "a1", "a2")
	defer rec.Release()
	res, err = c.AppendArrow(ctx, client.KindRollout, "run-1", rec, false)
	require.NoError(t, err)
	require.Equal(t, 2, res.Count)
	_, err = c.Get(ctx, client.KindRollout, "run-1", "a2")
	require.NoError(t, err, "read-your-write on the answering worker")

	require.NoError(t, c.DeleteRow(ctx, client.KindRollout, "run-1", "r0"))
	_, err = c.Get(ctx, client.KindRollout, "run-1", "r0")
	require.ErrorIs(t, err, client.ErrRowNotFound)
	require.NoError(t, c.Flush(ctx, client.KindRollout, "run-1"))

	page, err := c.ListStores(ctx, client.KindRollout, "run", "", 0)
	require.NoError(t, err)
	require.Len(t, page.Stores, 1)
	require.NoError(t, c.DeleteStore(ctx, client.KindRollout, "run-1"))
	_, err = c.GetStore(ctx, client.KindRollout, "run-1")
	require.True(t, client.IsNotFound(err), "%v", err)
}

func TestGenericStoreAndErrors(t *testing.T) {
	ctx := context.Background()
	c, err := client.New(server(t, nil))
	require.NoError(t, err)
	_, _, err = c.CreateStore(ctx, client.KindGeneric, "g", client.CreateOptions{Schema: json.RawMessage(`{"columns": [["x", "nonsense"]]}`)})
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
	require.NotEmpty(t, apiErr.Code)
	require.NotEmpty(t, apiErr.Message)

	schema := json.RawMessage(`{"columns": [["id", "string"], ["step", "int64"], ["tag", "string"]]}`)
	s, created, err := c.CreateStore(ctx, client.KindGeneric, "g", client.CreateOptions{Schema: schema})
	require.NoError(t, err)
	require.True(t, created)
	require.JSONEq(t, string(schema), string(s.Schema))
	_, err = c.Append(ctx, client.KindGeneric, "g", rows(t,
		map[string]any{"id": "a", "step": 1, "tag": "x"}, map[string]any{"id": "b", "step": 2, "tag": "y"}), true)
	require.NoError(t, err)
	row, err := c.Get(ctx, client.KindGeneric, "g", "b")
	require.NoError(t, err)
	require.Contains(t, string(row), `"tag":"y"`)
	_, err = c.Get(ctx, client.KindGeneric, "g", "zzz")
	require.ErrorIs(t, err, client.ErrRowNotFound)
	var n int
	require.NoError(t, c.Scan(ctx, client.KindGeneric, "g", client.ScanOptions{Filter: json.RawMessage(`{"tag":"x"}`)},
		func(json.RawMessage) error { n++; return nil }))
	require.Equal(t, 1, n)

	_, err = c.Get(ctx, client.KindGeneric, "missing", "a")
	require.True(t, client.IsNotFound(err))
	require.NotErrorIs(t, err, client.ErrRowNotFound, "an unknown store is not a missing row")
	_, err = c.GetStore(ctx, client.KindRollout, "../etc")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.Status)
}

func TestTokensAndMaintenance(t *testing.T) {
	ctx := context.Background()
	var queued []string
	url := server(t, func(d *api.Deps) {
		d.APIToken, d.AdminToken = "data-secret", "admin-secret"
		d.Maintenance = &fakemaint.Maintainer{QueueFunc: func(s workflows.StoreRef, r workflows.Request) (string, error) {
			queued = append(queued, s.WorkflowID()+" "+string(r.Op))
			return "run-1", nil
		}, RunFunc: func(_ context.Context, s workflows.StoreRef, r workflows.Request) (workflows.ActivityResult, error) {
			if r.Op == workflows.OpCleanupVersions {
				return workflows.ActivityResult{}, temporal.NewNonRetryableApplicationError("cleanup_versions rollout/m: corrupt data", workflows.ErrCorrupt, nil)
			}
			return workflows.ActivityResult{GenerationsMerged: 2, RowsMerged: 40, TableVersion: 3}, nil
		}}
	})
	anon, err := client.New(url)
	require.NoError(t, err)
	_, err = anon.ListStores(ctx, client.KindRollout, "", "", 0)
	var apiErr *client.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.Status)

	c, err := client.New(url, client.WithToken("data-secret"), client.WithAdminToken("admin-secret"))
	require.NoError(t, err)
	_, _, err = c.CreateStore(ctx, client.KindRollout, "m", client.CreateOptions{})
	require.NoError(t, err)
	run, err := c.RequestMaintenance(ctx, client.KindRollout, "m", client.OpCompact)
	require.NoError(t, err)
	require.Equal(t, "store/rollout/m", run.WorkflowID)
	require.Equal(t, "run-1", run.RunID)
	require.Equal(t, []string{"store/rollout/m compact"}, queued)
	out, err := c.RunMaintenance(ctx, client.KindRollout, "m", client.OpMergeWAL, 1)
	require.NoError(t, err)
	require.Equal(t, client.MaintenanceResult{GenerationsMerged: 2, RowsMerged: 40, TableVersion: 3}, out.Result)
	_, err = c.RunMaintenance(ctx, client.KindRollout, "m", client.OpCleanupVersions, 0)
	require.ErrorAs(t, err, &apiErr)
	require.Contains(t, apiErr.Message, "Corrupt")
	_, err = c.RunMaintenance(ctx, client.KindRollout, "missing", client.OpMergeWAL, 0)
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.Status, "an unknown store is refused before anything is queued")

	_, err = client.New("ftp://x")
	require.Error(t, err)
	k, name, err := client.ParseRef("rollouts/run-7")
	require.NoError(t, err)
	require.Equal(t, client.KindRollout, k)
	require.Equal(t, "run-7", name)
	_, _, err = client.ParseRef("run-7")
	require.Error(t, err)
}

// The client's status types mirror the server's (the client does not import the server):
// every field of the server's answer, by JSON name and Go type, is one the client decodes.
func TestStatusTypesMirrorTheServersAnswer(t *testing.T) {
	fields := func(v any) map[string]string {
		out := map[string]string{}
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			ft := f.Type.String()
			if f.Type.Kind() == reflect.Slice { // element types compared on their own below
				ft = "slice"
			}
			out[f.Tag.Get("json")] = ft
		}
		return out
	}
	require.Equal(t, fields(api.StatusResponse{}), fields(client.StatusReport{}))
	require.Equal(t, fields(api.StoreStatus{}), fields(client.StoreStatus{}))
	require.Equal(t, fields(api.MaintenanceFailure{}), fields(client.MaintenanceFailure{}))
}

// jsonShape is a type's JSON members, nested ones by path ("quota.max_rows"), each with its
// kind: what a decoder of the answer sees, whatever package declares the types.
func jsonShape(rt reflect.Type, prefix string, out map[string]string) map[string]string {
	for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice {
		rt = rt.Elem()
	}
	if rt.Kind() != reflect.Struct || rt.PkgPath() == "time" {
		out[prefix] = rt.Kind().String()
		return out
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			jsonShape(f.Type, prefix, out)
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		jsonShape(f.Type, name, out)
	}
	return out
}

// The client's tenant and route types mirror the server's answers member by member.
func TestTenantAndRouteTypesMirrorTheServersAnswers(t *testing.T) {
	shape := func(v any) map[string]string { return jsonShape(reflect.TypeOf(v), "", map[string]string{}) }
	require.Equal(t, shape(api.TenantsResponse{}), shape(client.TenantsReport{}))
	require.Equal(t, shape(api.TenantQuota{}), shape(client.TenantQuota{}))
	require.Equal(t, shape(api.TenantLimits{}), shape(client.TenantLimits{}))
	require.Equal(t, shape(api.RouteResponse{}), shape(client.Route{}))
	require.Contains(t, shape(api.TenantsResponse{}), "tenants.quota.max_rows")
}
