// The OpenAPI 3.0 document served at /api/v1/openapi.json, built from the route table below and
// the handlers' own request and response types (openapischema.go): operationIds, path and query
// parameters, request bodies, and every status a route answers with its schema. Every registered
// route must appear in the table (a test checks it against the router; another generates a Go
// client from the document and drives a real server with it).
package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/datagen"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/workflows"
)

// operation is one route of the document.
type operation struct {
	method, path, id, summary string
	query                     []param
	// body is the request body: a Go value whose type is the JSON body, or a bodySpec.
	body      any
	responses []resp
}

type param struct{ name, typ, doc string }

// bodySpec is a request body given by schema, with the content types it may also take.
type bodySpec struct {
	json     any // a Go value (its type) or a schema map
	extra    []string
	optional bool // the route takes no body too
}

type resp struct {
	status int
	body   any    // a Go value whose type is the JSON answer, a schema map, or nil
	mime   string // "" = application/json
	doc    string
}

const (
	mimeArrow     = "application/vnd.apache.arrow.stream"
	mimeMultipart = "multipart/form-data"
)

// Record and row bodies, by schema.
var (
	rolloutRecord = map[string]any{"$ref": "#/components/schemas/RolloutRecord"}
	genericRow    = map[string]any{"type": "object", "additionalProperties": true, "description": "a row: the store's declared columns by name (id required)"}
	anyObject     = map[string]any{"type": "object", "additionalProperties": true}
)

var (
	qLimit      = param{"limit", "integer", "page size, 1-10000"}
	qOffset     = param{"offset", "integer", "matching rows to skip first"}
	qCursor     = param{"cursor", "string", "the next_cursor of the previous page"}
	qPrefix     = param{"prefix", "string", "only store names starting with this"}
	qFlush      = param{"flush", "boolean", "seal before answering: visible to every worker"}
	qExistOK    = param{"exist_ok", "boolean", "a store of the same definition is answered 200, not 409"}
	qVersion    = param{"version", "integer", "read this retained base-table version (without the WAL)"}
	qStoreLists = []param{qLimit, qCursor, qPrefix}
	qSource     = param{"source", "string", "the rows read: all (default: the base table and the WAL), base (or fragments: the base table alone), wal (rows not merged yet)"}
)

// queryBody is the query route's request body.
var queryBody = map[string]any{"type": "object", "required": []string{"sql"}, "properties": map[string]any{
	"sql":      map[string]any{"type": "string", "description": "one read-only statement (SELECT or WITH … SELECT) over the table t (also named records)"},
	"source":   map[string]any{"type": "string", "enum": []string{"all", "base", "fragments", "wal"}},
	"limit":    map[string]any{"type": "integer", "description": "the most rows answered (at most the server's cap)"},
	"snapshot": map[string]any{"type": "string", "description": "read this read token's cut of the store (POST /api/v1/snapshots) instead of its live view"},
}}

// getRowsBody is the batch read's request body.
var getRowsBody = map[string]any{"type": "object", "required": []string{"ids"}, "properties": map[string]any{
	"ids":     map[string]any{"type": "array", "maxItems": maxGetRowsIDs, "items": map[string]any{"type": "string"}},
	"columns": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
}}

func errorsFor(statuses ...int) []resp {
	out := make([]resp, len(statuses))
	for i, s := range statuses {
		out[i] = resp{status: s, body: ErrorBody{}, doc: http.StatusText(s)}
	}
	return out
}

func with(ok []resp, errs ...int) []resp { return append(ok, errorsFor(errs...)...) }

// storeRoutes are the registry routes every kind has.
func storeRoutes(collection, kind, title string, create any) []operation {
	return storeRoutesListing(collection, kind, title, create, StoreList{})
}

// storeRoutesListing is storeRoutes for a kind whose listing has its own shape.
func storeRoutesListing(collection, kind, title string, create, list any) []operation {
	base := "/api/v1/" + collection
	return []operation{
		{"POST", base, "create" + title + "Store", "Create a " + kind + " store (201; 409 ALREADY_EXISTS when the name exists, unless exist_ok: then 200 for the same definition)",
			[]param{qExistOK}, create, with([]resp{{status: 201, body: StoreInfo{}, doc: "created"}, {status: 200, body: StoreInfo{}, doc: "exists (exist_ok)"}}, 400, 409, 503)},
		{"GET", base, "list" + title + "Stores", "List " + kind + " stores: every store without ?limit (streamed), a page with ?limit (next_cursor)",
			qStoreLists, nil, with([]resp{{status: 200, body: list}}, 400, 503)},
		{"GET", base + "/{name}", "get" + title + "Store", "Describe a " + kind + " store", nil, nil, with([]resp{{status: 200, body: StoreInfo{}}}, 400, 404, 503)},
		{"DELETE", base + "/{name}", "delete" + title + "Store", "Delete a " + kind + " store (soft delete; data purged by maintenance)", nil, nil,
			with([]resp{{status: 204, doc: "deleted"}}, 400, 404, 503)},
		{"POST", base + "/{name}/flush", "flush" + title + "Store", "Seal this worker's shard: what it acknowledged becomes visible to every worker", nil, nil,
			with([]resp{{status: 204, doc: "sealed"}}, 404, 503)},
		{"GET", base + "/{name}/route", "route" + title + "Store",
			"The store's preferred workers (rendezvous hashing over the live workers): send its appends there so it keeps few write shards; every worker still accepts them. Append answers carry them in the Strata-Preferred-Workers header",
			nil, nil, with([]resp{{status: 200, body: RouteResponse{}}}, 400, 404, 503)},
		{"POST", base + "/{name}/query", "query" + title + "Store",
			"Run one read-only SQL statement (DuckDB) over a consistent snapshot of the store (the table t, also named records; newest row per id, base table and WAL); ?format=arrow|csv|parquet (or Accept: Arrow) streams the result",
			[]param{{"format", "string", "json (default), arrow, csv or parquet"}}, queryBody,
			with([]resp{{status: 200, body: QueryResponse{}, doc: "the result (as JSON; ?format= for the others)"}}, 400, 404, 408, 503)},
		{"GET", base + "/{name}/changes", "changes" + title + "Store",
			"The change feed: rows sealed after a cursor (newest version per id in a batch, deletes as _op delete), as JSON lines ending with {_cursor, _rows, _groups}, an Arrow stream (cursor in the schema metadata strata.feed.cursor) or server-sent events (Accept: text/event-stream; each event's id is its cursor); 410 CURSOR_EXPIRED names a restart point",
			feedParams, nil, with([]resp{{status: 200, mime: mimeNDJSON, doc: "a batch (JSON lines; ?format=arrow or Accept: Arrow for Arrow IPC, text/event-stream for events)"}}, 400, 404, 410, 503)},
		{"POST", base + "/{name}/consumers", "createConsumerOf" + title + "Store", "Register a named change-feed consumer at the feed's end (start now) or its oldest held rows (start earliest)", nil, ConsumerRequest{},
			with([]resp{{status: 201, body: ConsumerInfo{}}}, 400, 404, 409, 503)},
		{"GET", base + "/{name}/consumers", "listConsumersOf" + title + "Store", "The store's consumers with their committed cursors and lag", nil, nil,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "properties": map[string]any{"consumers": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/ConsumerInfo"}}}}}}, 400, 404, 503)},
		{"GET", base + "/{name}/consumers/{consumer}", "getConsumerOf" + title + "Store", "A consumer's committed cursor and lag", nil, nil,
			with([]resp{{status: 200, body: ConsumerInfo{}}}, 400, 404, 503)},
		{"POST", base + "/{name}/consumers/{consumer}/commit", "commitConsumerOf" + title + "Store", "Record how far the consumer has processed: the cursor of the last batch it finished (merges keep what it has not committed, within --feed-retention)", nil, CommitRequest{},
			with([]resp{{status: 200, body: ConsumerInfo{}}}, 400, 404, 503)},
		{"DELETE", base + "/{name}/consumers/{consumer}", "deleteConsumerOf" + title + "Store", "Drop a consumer (what it held is released by the next merge or cleanup)", nil, nil,
			with([]resp{{status: 204, doc: "deleted"}}, 400, 404, 503)},
	}
}

// feedParams are the change feed's query parameters.
var feedParams = []param{
	{"cursor", "string", "where to start: the cursor a previous batch returned"},
	{"consumer", "string", "start from this named consumer's committed cursor (exclusive with cursor)"},
	{"start", "string", "without cursor or consumer: now (default: rows sealed from now on) or earliest (the oldest rows the feed holds)"},
	{"limit", "integer", "rows per batch, 1-100000 (default 1000; a group may exceed it)"},
	{"wait", "string", "long-poll up to this long (30s, or seconds; at most 60s) for the first row"},
	{"columns", "string", "comma-separated columns (default all but blobs, as listings; the id always)"},
	{"complete_by", "string", "deliver complete groups: rows with equal values of this column"},
	{"group_size", "integer", "with complete_by: a group is complete with this many distinct ids"},
	{"group_timeout", "string", "with complete_by: a group first sealed this long ago is delivered with _complete false"},
	{"max_held", "integer", "with complete_by: rows held back at most (default 10000; past it the oldest groups go out incomplete)"},
	{"format", "string", "jsonl (default), arrow or sse"},
}

// qSnapshot is the read-token parameter of read routes.
var qSnapshot = param{"snapshot", "string", "read this read token's cut of the store (POST /api/v1/snapshots)"}

var mergeWALResp = with([]resp{{status: 200, body: MergeWALResponse{}}}, 404, 503)

func apiOperations() []operation {
	ops := []operation{
		{"GET", "/api/v1/health", "getHealth", "Liveness: the catalog, the storage and Temporal, each probed within 2 s", nil, nil,
			[]resp{{status: 200, body: HealthResponse{}}, {status: 503, body: HealthResponse{}, doc: "degraded"}}},
		{"GET", "/api/v1/openapi.json", "getOpenAPI", "This document", nil, nil, []resp{{status: 200, body: anyObject}}},
		{"GET", "/metrics", "metrics", "Prometheus metrics", nil, nil, []resp{{status: 200, mime: "text/plain", doc: "the exposition format"}}},
	}
	ops = append(ops, storeRoutes("rollouts", "rollout", "Rollout", CreateStoreRequest{})...)
	ops = append(ops,
		operation{"POST", "/api/v1/snapshots", "createSnapshot", "Take a read token: every named store's state (table version and sealed generations) at one moment, readable with ?snapshot= on any worker until it expires", nil, SnapshotRequest{},
			with([]resp{{status: 201, body: SnapshotInfo{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/snapshots", "listSnapshots", "Live read tokens, newest first", nil, nil,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "properties": map[string]any{"snapshots": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/SnapshotInfo"}}}}}}, 503)},
		operation{"GET", "/api/v1/snapshots/{id}", "getSnapshot", "A read token and its stores' cuts", nil, nil,
			with([]resp{{status: 200, body: SnapshotInfo{}}}, 404, 410, 503)},
		operation{"DELETE", "/api/v1/snapshots/{id}", "deleteSnapshot", "Release a read token now (its reads answer 410 after)", nil, nil,
			with([]resp{{status: 204, doc: "released"}}, 404, 503)},
	)
	ops = append(ops,
		operation{"POST", "/api/v1/rollouts/{name}/records", "addRolloutRecords",
			"Append rollout records: JSON {records:[...]}, multipart (a metadata part, then payload parts named by record index) or an Arrow IPC stream; durable when answered",
			[]param{qFlush}, bodySpec{json: map[string]any{"type": "object", "required": []string{"records"},
				"properties": map[string]any{"records": map[string]any{"type": "array", "items": rolloutRecord}}}, extra: []string{mimeMultipart, mimeArrow}},
			with([]resp{{status: 201, body: AppendResponse{}}}, 400, 404, 408, 413, 429, 503)},
		operation{"GET", "/api/v1/rollouts/{name}/records", "listRolloutRecords",
			"List records in id order; filters= a SQL predicate (step > 5 AND role = 'user') or a JSON object of exact matches; Accept: application/vnd.apache.arrow.stream for Arrow IPC",
			[]param{qLimit, qOffset, qCursor, {"filters", "string", "a SQL predicate or a JSON object of exact matches"}, qVersion, qSnapshot, qSource}, nil,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "required": []string{"records"}, "properties": map[string]any{
				"records": map[string]any{"type": "array", "items": rolloutRecord}, "next_cursor": map[string]any{"type": "string"}}}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/rollouts/{name}/records/{id}", "getRolloutRecord", "Get one record ({record: null} when absent)", []param{qVersion, qSnapshot}, nil,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "required": []string{"record"}, "properties": map[string]any{
				"record": map[string]any{"allOf": []any{rolloutRecord}, "nullable": true}}}}}, 400, 404, 503)},
		operation{"DELETE", "/api/v1/rollouts/{name}/records/{id}", "deleteRolloutRecord", "Delete a record (tombstone)", nil, nil,
			with([]resp{{status: 200, body: DeleteResponse{}}}, 400, 404, 503)},
		operation{"POST", "/api/v1/rollouts/{name}/get-rows", "getRolloutRecords", "Read up to 1,024 records by id in one snapshot ({records: [...]}, in the order asked, absent ids left out)", []param{qVersion, qSnapshot}, getRowsBody,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "required": []string{"records"}, "properties": map[string]any{
				"records": map[string]any{"type": "array", "items": rolloutRecord}}}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/rollouts/{name}/records/{id}/blob", "getRolloutBlob", "Download a record's binary payload", []param{qVersion, qSnapshot}, nil,
			with([]resp{{status: 200, mime: "application/octet-stream", doc: "the payload"}}, 404, 503)},
		operation{"POST", "/api/v1/internal/merge-wal/{name}", "mergeRolloutWAL", "Seal this worker's shard of a rollout store and merge the store's pending generations into its base table",
			nil, nil, mergeWALResp},
		operation{"POST", "/api/v1/rollouts/{name}/compact", "compactRolloutStore", "Compact the base table now", nil, bodySpec{json: CompactRequest{}, optional: true},
			with([]resp{{status: 200, body: CompactResponse{}}}, 400, 404, 409, 503)},
		operation{"GET", "/api/v1/rollouts/{name}/compact/stats", "getRolloutCompactionStats", "Compaction state of the base table", nil, nil,
			with([]resp{{status: 200, body: CompactStats{}}}, 404, 503)},
		operation{"POST", "/api/v1/rollouts/{name}/checkout", "checkoutRolloutStore", "Confirm a base-table version is readable; read it with ?version=N on the record routes", nil, CheckoutRequest{},
			with([]resp{{status: 200, body: CheckoutRequest{}}}, 400, 404, 503)},
	)
	ops = append(ops, storeRoutes("generic", "generic", "Generic", CreateGenericRequest{})...)
	ops = append(ops,
		operation{"POST", "/api/v1/generic/{name}/rows", "addGenericRows", "Add rows (JSON {rows:[...]}); durable when answered", []param{qFlush},
			map[string]any{"type": "object", "required": []string{"rows"}, "properties": map[string]any{"rows": map[string]any{"type": "array", "items": genericRow}}},
			with([]resp{{status: 201, body: AppendResponse{}}}, 400, 404, 408, 413, 429, 503)},
		operation{"GET", "/api/v1/generic/{name}/rows", "listGenericRows", "List rows in id order; filter= a SQL predicate (step > 5 AND role = 'user') or a JSON object of equalities",
			[]param{qLimit, qOffset, qCursor, {"filter", "string", "a SQL predicate or a JSON object of equalities"}, qVersion, qSnapshot, qSource}, nil,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "required": []string{"rows"}, "properties": map[string]any{
				"rows": map[string]any{"type": "array", "items": genericRow}, "next_cursor": map[string]any{"type": "string"}}}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/generic/{name}/rows/{id}", "getGenericRow", "Get one row (?columns=a,b: a blob column named here comes back base64)",
			[]param{{"columns", "string", "comma-separated columns (id is always included)"}, qVersion, qSnapshot}, nil, with([]resp{{status: 200, body: genericRow}}, 400, 404, 410, 503)},
		operation{"POST", "/api/v1/generic/{name}/get-rows", "getGenericRows", "Read up to 1,024 rows by id in one snapshot ({rows: [...]}, in the order asked, absent ids left out)", []param{qVersion, qSnapshot}, getRowsBody,
			with([]resp{{status: 200, body: map[string]any{"type": "object", "required": []string{"rows"}, "properties": map[string]any{
				"rows": map[string]any{"type": "array", "items": genericRow}}}}}, 400, 404, 503)},
		operation{"DELETE", "/api/v1/generic/{name}/rows/{id}", "deleteGenericRow", "Delete a row (tombstone)", nil, nil,
			with([]resp{{status: 200, body: DeleteResponse{}}}, 400, 404, 503)},
		operation{"POST", "/api/v1/generic/{name}/merge-wal", "mergeGenericWAL", "Seal this worker's shard and merge the store's pending generations", nil, nil, mergeWALResp},
	)
	ops = append(ops, storeRoutes("datagen", "datagen", "Datagen", CreateStoreRequest{})...)
	qItem := []param{{"load_blobs", "boolean", "inline blob bytes (base64)"}}
	ops = append(ops,
		operation{"POST", "/api/v1/datagen/{name}/events", "appendDatagenEvents",
			"Append events (JSON or an Arrow IPC stream of the log's columns); checkpoint=true: one atomic step boundary (field events + exactly one STEP_COMPLETED of one item/checkpoint/writer attempt); sealed before answering",
			[]param{{"checkpoint", "boolean", "an atomic step boundary"}}, bodySpec{json: DatagenEventsRequest{}, extra: []string{mimeArrow}},
			with([]resp{{status: 201, body: AppendResponse{}}}, 400, 404, 408, 413, 429, 503)},
		operation{"GET", "/api/v1/datagen/{name}/items/{item_id}", "foldDatagenItem", "Fold an item into its state ({item: null} when never started)", qItem, nil,
			with([]resp{{status: 200, body: DatagenItemResponse{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/datagen/{name}/items/{item_id}/failures", "getDatagenItemFailures", "An item's FAILED events", nil, nil,
			with([]resp{{status: 200, body: DatagenFailuresResponse{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/datagen/{name}/items/{item_id}/events", "getDatagenItemEvents", "An item's raw events in (item_seq, event_id) order, without blob bytes", nil, nil,
			with([]resp{{status: 200, body: DatagenEventsResponse{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/datagen/{name}/overview", "getDatagenOverview", "Run overview: root items by status, failures by error type and run, completed steps", nil, nil,
			with([]resp{{status: 200, body: datagen.Overview{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/datagen/{name}/root-status", "getDatagenRootStatuses", "Lifecycle status of roots (a root never started is absent)",
			[]param{{"ids", "string", "comma-separated root item ids"}}, nil, with([]resp{{status: 200, body: DatagenRootStatusesResponse{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/datagen/{name}/roots/{root_item_id}/events", "getDatagenRootEvents", "Raw events of a root and its sub-items, in (item_id, item_seq, event_id) order", nil, nil,
			with([]resp{{status: 200, body: DatagenEventsResponse{}}}, 400, 404, 503)},
		operation{"GET", "/api/v1/datagen/{name}/blobs/{event_id}", "getDatagenBlob", "Download an event's blob", []param{{"item_id", "string", "the event's item: a point read"}}, nil,
			with([]resp{{status: 200, mime: "application/octet-stream", doc: "the blob"}}, 400, 404, 503)},
		operation{"POST", "/api/v1/datagen/{name}/merge-wal", "mergeDatagenWAL", "Seal this worker's shard and merge the store's pending generations", nil, nil, mergeWALResp},
	)
	ops = append(ops, contextOperations()...)
	ops = append(ops,
		operation{"GET", "/api/v1/admin/status", "getStatus", "Each store's maintenance state (pending generations, fragments, index coverage, last merge/compaction/cleanup) and failing maintenance (admin token)",
			[]param{{"kind", "string", "only stores of this kind"}, qPrefix, qLimit, {"failing", "boolean", "only the failing maintenance"}}, nil,
			with([]resp{{status: 200, body: StatusResponse{}}}, 400, 401, 503)},
		operation{"GET", "/api/v1/admin/tenants", "listTenants",
			"Tenants (store-name prefixes) with their stores' usage, merge backlog and quota, most pending generations first (admin token)",
			[]param{qLimit}, nil, with([]resp{{status: 200, body: TenantsResponse{}}}, 400, 401, 503)},
		operation{"GET", "/api/v1/admin/tenants/quotas", "listTenantQuotas", "Every tenant quota (admin token)", nil, nil,
			with([]resp{{status: 200, body: TenantQuotasResponse{}}}, 401, 503)},
		operation{"PUT", "/api/v1/admin/tenants/{tenant}/quota", "setTenantQuota",
			"Set a tenant's quotas (0: no limit) and maintenance weight; appends past them get 429 QUOTA_EXCEEDED (admin token)", nil,
			TenantLimits{}, with([]resp{{status: 200, body: TenantQuota{}}}, 400, 401, 415, 503)},
		operation{"DELETE", "/api/v1/admin/tenants/{tenant}/quota", "deleteTenantQuota", "Remove a tenant's quotas (admin token)", nil, nil,
			with([]resp{{status: 204, doc: "removed"}}, 400, 401, 404, 503)},
		operation{"GET", "/api/v1/admin/{kind}/{name}/history", "getMaintenanceHistory",
			"The store's last maintenance attempts from the catalog, newest first (admin token)", []param{{"limit", "integer", "1-100 (default 100)"}}, nil,
			with([]resp{{status: 200, body: MaintenanceHistory{}}}, 400, 401, 404, 503)},
		operation{"POST", "/api/v1/admin/{kind}/{name}/maintenance", "requestMaintenance",
			"Queue maintenance on the store's workflow (admin token); ?wait=true runs it and answers its result", []param{{"wait", "boolean", "wait for the run and answer its result"}},
			workflows.Request{}, with([]resp{{status: 202, body: MaintenanceResponse{}, doc: "queued"}, {status: 200, body: MaintenanceResponse{}, doc: "ran (wait=true)"}}, 400, 401, 404, 503)},
	)
	return ops
}

// contextOperations are the context kind's routes.
func contextOperations() []operation {
	base := "/api/v1/contexts/{name}"
	qLifecycle := []param{{"include_expired", "boolean", "include expired records"}, {"include_retired", "boolean", "include retired, superseded and non-active records"}}
	qExternalID := param{"external_id", "string", "the record's external id"}
	ops := storeRoutesListing("contexts", "context", "Context", CreateContextRequest{}, ContextList{})
	return append(ops,
		operation{"POST", base + "/records", "addContextRecords", "Add records (ids chosen by the server, answered in order); durable when answered", []param{qFlush},
			contexts.AddRecordsRequest{}, with([]resp{{status: 201, body: AppendResponse{}}}, 400, 404, 409, 413, 429, 503)},
		operation{"GET", base + "/records", "listContextRecords", "List visible records in creation order; filters= a JSON object (built-in fields, created_at bounds, metadata keys)",
			append([]param{qLimit, qOffset, qVersion, qSnapshot, {"filters", "string", "a JSON filter object"}}, qLifecycle...), nil,
			with([]resp{{status: 200, body: contexts.RecordsResponse{}}}, 400, 404, 503)},
		operation{"PUT", base + "/records", "upsertContextRecord", "Insert, or replace the record holding the same external_id (the new record supersedes it)", []param{qFlush},
			contexts.UpsertRequest{}, with([]resp{{status: 201, body: contexts.UpsertResponse{}, doc: "inserted"}, {status: 200, body: contexts.UpsertResponse{}, doc: "replaced"}}, 400, 404, 413, 503)},
		operation{"PUT", base + "/records/batch", "upsertContextRecords", "Upsert many records by external_id, in one write", []param{qFlush},
			contexts.UpsertBatchRequest{}, with([]resp{{status: 200, body: contexts.UpsertBatchResponse{}}}, 400, 404, 413, 503)},
		operation{"PATCH", base + "/records", "updateContextRecord", "Update a record by id or external_id: a successor record supersedes it", []param{qFlush},
			contexts.UpdateRequest{}, with([]resp{{status: 200, body: contexts.UpdateResponse{}}}, 400, 404, 503)},
		operation{"DELETE", base + "/records", "deleteContextRecordByExternalID", "Delete the record holding an external id", []param{qExternalID, qFlush}, nil,
			with([]resp{{status: 200, body: contexts.DeleteResponse{}}}, 400, 404, 503)},
		operation{"GET", base + "/records/by-external-id", "getContextRecordByExternalID", "The record holding an external id ({record: null} when none)", []param{qExternalID}, nil,
			with([]resp{{status: 200, body: contexts.RecordResponse{}}}, 400, 404, 503)},
		operation{"GET", base + "/records/related", "relatedContextRecords", "Visible records with a relationship to target_id",
			append([]param{{"target_id", "string", "the relationship's target"}, {"relation", "string", "only this relation"}, qLimit}, qLifecycle...), nil,
			with([]resp{{status: 200, body: contexts.RecordsResponse{}}}, 400, 404, 503)},
		operation{"GET", base + "/records/{id}", "getContextRecord", "Get one record, whatever its lifecycle ({record: null} when absent)", []param{qVersion, qSnapshot}, nil,
			with([]resp{{status: 200, body: contexts.RecordResponse{}}}, 400, 404, 410, 503)},
		operation{"DELETE", base + "/records/{id}", "deleteContextRecord", "Delete a record (tombstone)", []param{qFlush}, nil,
			with([]resp{{status: 200, body: contexts.DeleteResponse{}}}, 400, 404, 503)},
		operation{"GET", base + "/records/{id}/payload", "getContextPayload", "Download a record's binary payload (else its text)", nil, nil,
			with([]resp{{status: 200, mime: "application/octet-stream", doc: "the payload"}}, 400, 404, 503)},
		operation{"POST", base + "/search", "searchContext", "Vector k-NN over visible records, filters applied before ranking", nil,
			contexts.SearchRequest{}, with([]resp{{status: 200, body: contexts.SearchResponse{}}}, 400, 404, 503)},
		operation{"POST", base + "/retrieve", "retrieveContext", "Hybrid retrieval: text (BM25) and vector channels fused by reciprocal rank fusion", nil,
			contexts.RetrieveRequest{}, with([]resp{{status: 200, body: contexts.RetrieveResponse{}}}, 400, 404, 503)},
		operation{"GET", base + "/version", "getContextVersion", "The base table's version", nil, nil,
			with([]resp{{status: 200, body: VersionResponse{}}}, 400, 404, 503)},
		operation{"POST", base + "/checkout", "checkoutContextStore", "Confirm a base-table version is readable; list it with ?version=N", nil, CheckoutRequest{},
			with([]resp{{status: 200, body: CheckoutRequest{}}}, 400, 404, 503)},
		operation{"POST", base + "/compact", "compactContextStore", "Compact the base table now", nil, bodySpec{json: CompactRequest{}, optional: true},
			with([]resp{{status: 200, body: CompactResponse{}}}, 400, 404, 503)},
		operation{"GET", base + "/compact/stats", "getContextCompactionStats", "Compaction state of the base table", nil, nil,
			with([]resp{{status: 200, body: CompactStats{}}}, 404, 503)},
		operation{"POST", base + "/merge-wal", "mergeContextWAL", "Seal this worker's shard and merge the store's pending generations", nil, nil, mergeWALResp},
	)
}

// schemaOf is the schema of a body or answer: a schema map as it is, else its Go type's.
func (s *schemaSet) schemaOf(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return s.of(reflect.TypeOf(v))
}

// buildOpenAPI assembles the document.
func buildOpenAPI(version string) map[string]any {
	schemas := newSchemaSet()
	schemas.extra["RolloutRecord"] = arrowObject(kinds.RolloutSchema, kinds.RolloutJSONColumns, "id", "rollout_id")
	paths := map[string]map[string]any{}
	for _, r := range apiOperations() {
		if paths[r.path] == nil {
			paths[r.path] = map[string]any{}
		}
		responses := map[string]any{"default": map[string]any{"description": "Error envelope {\"error\": {\"code\", \"message\"}}",
			"content": map[string]any{"application/json": map[string]any{"schema": schemas.of(reflect.TypeOf(ErrorBody{}))}}}}
		for _, rs := range r.responses {
			doc := rs.doc
			if doc == "" {
				doc = http.StatusText(rs.status)
			}
			out := map[string]any{"description": doc}
			if rs.mime != "" {
				out["content"] = map[string]any{rs.mime: map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}
			} else if rs.body != nil {
				out["content"] = map[string]any{"application/json": map[string]any{"schema": schemas.schemaOf(rs.body)}}
			}
			responses[strconv.Itoa(rs.status)] = out
		}
		op := map[string]any{"operationId": r.id, "summary": r.summary, "responses": responses}
		var params []map[string]any
		for _, seg := range strings.Split(r.path, "/") {
			if strings.HasPrefix(seg, "{") {
				params = append(params, map[string]any{"name": strings.Trim(seg, "{}"), "in": "path", "required": true, "schema": map[string]string{"type": "string"}})
			}
		}
		for _, q := range r.query {
			params = append(params, map[string]any{"name": q.name, "in": "query", "required": false, "description": q.doc, "schema": map[string]string{"type": q.typ}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.body != nil {
			spec, ok := r.body.(bodySpec)
			if !ok {
				spec = bodySpec{json: r.body}
			}
			content := map[string]any{"application/json": map[string]any{"schema": schemas.schemaOf(spec.json)}}
			for _, m := range spec.extra {
				content[m] = map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}
			}
			op["requestBody"] = map[string]any{"required": !spec.optional, "content": content}
		}
		paths[r.path][strings.ToLower(r.method)] = op
	}
	return map[string]any{
		"openapi":    "3.0.3",
		"info":       map[string]string{"title": "Strata data API", "version": version},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas.componentsJSON()},
	}
}

func (h *handlers) openAPI(c echo.Context) error { return c.JSON(http.StatusOK, h.openAPIDoc()) }

// OpenAPIDocument is the document the server serves, as JSON (for tools and tests).
func OpenAPIDocument(version string) ([]byte, error) { return json.Marshal(buildOpenAPI(version)) }
