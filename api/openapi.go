// The OpenAPI 3 document served at /api/v1/openapi.json. Every registered route must appear in
// apiRoutes (a test checks it against the router).
package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

type apiRoute struct {
	method, path, summary string
}

var apiRoutes = []apiRoute{
	{"GET", "/api/v1/health", "Liveness and catalog reachability"},
	{"GET", "/api/v1/openapi.json", "This document"},
	{"GET", "/metrics", "Prometheus metrics"},
	{"POST", "/api/v1/rollouts", "Create a rollout store (201 created; 409 ALREADY_EXISTS when the name exists, unless exist_ok: then 200 for the same definition)"},
	{"GET", "/api/v1/rollouts", "List rollout stores: every store without ?limit (streamed), a page with ?limit (next_cursor); ?cursor, ?prefix"},
	{"GET", "/api/v1/rollouts/{name}", "Describe a rollout store"},
	{"DELETE", "/api/v1/rollouts/{name}", "Delete a rollout store (soft delete; data purged by maintenance)"},
	{"POST", "/api/v1/rollouts/{name}/records", "Append rollout records: JSON {records:[...]}, multipart (metadata + payload parts) or an Arrow IPC stream; ?flush=true seals before answering"},
	{"GET", "/api/v1/rollouts/{name}/records", "List records (?limit, ?offset, ?cursor, ?filters= a SQL predicate or a JSON object of exact matches); Accept: application/vnd.apache.arrow.stream for Arrow IPC"},
	{"GET", "/api/v1/rollouts/{name}/records/{id}", "Get one record ({record: null} when absent)"},
	{"DELETE", "/api/v1/rollouts/{name}/records/{id}", "Delete a record (tombstone)"},
	{"GET", "/api/v1/rollouts/{name}/records/{id}/blob", "Download a record's binary payload"},
	{"POST", "/api/v1/rollouts/{name}/flush", "Seal this worker's shard: rows become visible to every worker"},
	{"POST", "/api/v1/internal/merge-wal/{name}", "Seal this worker's shard of a rollout store and merge the store's pending generations into its base table; {reclaimed: generations merged}"},
	{"POST", "/api/v1/rollouts/{name}/compact", "Compact the base table now ({target_rows_per_fragment?, materialize_deletions?})"},
	{"GET", "/api/v1/rollouts/{name}/compact/stats", "Compaction state of the base table"},
	{"POST", "/api/v1/rollouts/{name}/checkout", "Confirm a base-table version is readable ({version}); read it with ?version=N on the record routes"},
	{"POST", "/api/v1/generic", "Create a generic store with a declared schema"},
	{"GET", "/api/v1/generic", "List generic stores"},
	{"GET", "/api/v1/generic/{name}", "Describe a generic store"},
	{"DELETE", "/api/v1/generic/{name}", "Delete a generic store (soft delete)"},
	{"POST", "/api/v1/generic/{name}/rows", "Add rows (JSON {rows:[...]}); ?flush=true seals before answering"},
	{"GET", "/api/v1/generic/{name}/rows", "List rows (?limit, ?offset, ?cursor, ?filter= a SQL predicate, e.g. step > 5 AND role = 'user', or JSON equalities)"},
	{"GET", "/api/v1/generic/{name}/rows/{id}", "Get one row (?columns=a,b)"},
	{"DELETE", "/api/v1/generic/{name}/rows/{id}", "Delete a row (tombstone)"},
	{"POST", "/api/v1/generic/{name}/flush", "Seal this worker's shard"},
	{"POST", "/api/v1/generic/{name}/merge-wal", "Seal this worker's shard and merge the store's pending generations; {reclaimed: generations merged}"},
	{"POST", "/api/v1/datagen", "Create a datagen store (checkpoint event log; 201, or 409 ALREADY_EXISTS unless exist_ok)"},
	{"GET", "/api/v1/datagen", "List datagen stores"},
	{"GET", "/api/v1/datagen/{name}", "Describe a datagen store"},
	{"DELETE", "/api/v1/datagen/{name}", "Delete a datagen store (soft delete)"},
	{"POST", "/api/v1/datagen/{name}/events", "Append events (JSON {events:[...]} or Arrow IPC); ?checkpoint=true: one atomic step boundary (field events + exactly one STEP_COMPLETED of one item/checkpoint/writer attempt); 201 {version, count}; sealed before answering"},
	{"GET", "/api/v1/datagen/{name}/items/{item_id}", "Fold an item into its state ({item: null} when never started); ?load_blobs=true inlines blob bytes"},
	{"GET", "/api/v1/datagen/{name}/items/{item_id}/failures", "An item's FAILED events ({failures: [...]})"},
	{"GET", "/api/v1/datagen/{name}/items/{item_id}/events", "An item's raw events in (item_seq, event_id) order, without blob bytes"},
	{"GET", "/api/v1/datagen/{name}/overview", "Run overview: root items by status, failures by error type and run, completed steps"},
	{"GET", "/api/v1/datagen/{name}/root-status", "Lifecycle status of roots (?ids=a,b; a root never started is absent)"},
	{"GET", "/api/v1/datagen/{name}/roots/{root_item_id}/events", "Raw events of a root and its sub-items, in (item_id, item_seq, event_id) order"},
	{"GET", "/api/v1/datagen/{name}/blobs/{event_id}", "Download an event's blob (octet-stream; ?item_id= makes it a point read)"},
	{"POST", "/api/v1/datagen/{name}/flush", "Seal this worker's shard"},
	{"POST", "/api/v1/datagen/{name}/merge-wal", "Seal this worker's shard and merge the store's pending generations; {reclaimed: generations merged}"},
	{"POST", "/api/v1/admin/{kind}/{name}/maintenance", "Queue maintenance ({op: merge_wal|build_key_index|compact|cleanup_versions|stats_refresh}) on the store's workflow; admin token"},
}

func (h *handlers) openAPI(c echo.Context) error {
	paths := map[string]map[string]any{}
	for _, r := range apiRoutes {
		if paths[r.path] == nil {
			paths[r.path] = map[string]any{}
		}
		op := map[string]any{
			"summary": r.summary,
			"responses": map[string]any{
				"default": map[string]any{"description": "Error envelope {\"error\": {\"code\", \"message\"}}"},
				"200":     map[string]any{"description": "OK"},
			},
		}
		var params []map[string]any
		for _, seg := range strings.Split(r.path, "/") {
			if strings.HasPrefix(seg, "{") {
				params = append(params, map[string]any{"name": strings.Trim(seg, "{}"), "in": "path", "required": true, "schema": map[string]string{"type": "string"}})
			}
		}
		if params != nil {
			op["parameters"] = params
		}
		paths[r.path][strings.ToLower(r.method)] = op
	}
	return c.JSON(http.StatusOK, map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]string{"title": "Strata data API", "version": h.deps.Version},
		"paths":   paths,
	})
}
