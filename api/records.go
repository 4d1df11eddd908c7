// Shared record plumbing for store routes: resolving a store, decoding a JSON batch into Arrow,
// appending it, and reading pages and single rows back as JSON.
package api

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/arrowutil"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/predicate"
)

// withStore validates the name before anything touches storage, acquires the store and runs fn.
func (h *handlers) withStore(c echo.Context, kind catalog.Kind, fn func(*lsm.Store) error) error {
	return h.withStoreEntry(c, kind, func(s *lsm.Store, _ catalog.Store) error { return fn(s) })
}

// withStoreEntry is withStore for handlers that also need the store's registry row (from the
// store cache: no catalog query for a resident store).
func (h *handlers) withStoreEntry(c echo.Context, kind catalog.Kind, fn func(*lsm.Store, catalog.Store) error) error {
	name := c.Param("name")
	if err := catalog.ValidateName(name); err != nil {
		return err
	}
	s, entry, release, err := h.deps.Stores.AcquireEntry(c.Request().Context(), kind, name)
	if err != nil {
		return err
	}
	defer release()
	err = fn(s, entry)
	if errors.Is(err, lsm.ErrFenced) {
		h.deps.Stores.ReportFenced(kind, name)
	}
	return err
}

// idParam is the record id of the route: the path segment percent-decoded (an id may hold any
// character, "/" included, sent as %2F), a non-empty UTF-8 string — the rule appends enforce, so
// every id that was accepted can be addressed.
func idParam(c echo.Context) (string, error) { return pathParam(c, "id") }

// pathParam is the named path parameter, percent-decoded, as a non-empty UTF-8 string.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath != "" {
		// Echo routes on the raw path when the request's escaping differs from the default one
		// (a %2F, say): its parameters are then still escaped. Otherwise they are decoded.
		var err error
		if v, err = url.PathUnescape(v); err != nil {
			return "", invalid("%s: invalid percent-encoding", name)
		}
	}
	if v == "" || !utf8.ValidString(v) {
		return "", invalid("%s must be a non-empty UTF-8 string", name)
	}
	return v, nil
}

// flushRequested reads ?flush= (true, 1, yes or empty value; case-insensitive).
func flushRequested(c echo.Context) bool { return queryFlag(c, "flush") }

// queryFlag reads a boolean query parameter: true for true, 1, yes or an empty value
// (case-insensitive), false when absent or anything else.
func queryFlag(c echo.Context, name string) bool {
	if !c.QueryParams().Has(name) {
		return false
	}
	switch strings.ToLower(c.QueryParam(name)) {
	case "", "true", "1", "yes":
		return true
	}
	return false
}

// appendRecord appends a decoded batch durably, once its tenant's quotas admit it, and, when
// asked, seals so that every worker sees it before the response.
func (h *handlers) appendRecord(ctx context.Context, kind catalog.Kind, name string, s *lsm.Store, rec arrow.RecordBatch, flush bool) error {
	if err := h.admitAppend(ctx, name, rec); err != nil {
		return err
	}
	if _, err := s.Append(ctx, rec); err != nil {
		return err
	}
	if flush {
		return h.deps.Stores.Flush(ctx, kind, name, s)
	}
	return nil
}

// admitAppend checks an append of rec to the store name against its tenant's quotas (429
// QUOTA_EXCEEDED when one is reached: nothing is written).
func (h *handlers) admitAppend(ctx context.Context, name string, rec arrow.RecordBatch) error {
	if h.deps.Quotas == nil {
		return nil
	}
	return h.deps.Quotas.Admit(ctx, name, rec.NumRows(), arrowutil.RecordBytes(rec))
}

// tableVersion is the base table's version, reported by create/get/append responses.
func tableVersion(ctx context.Context, s *lsm.Store) (uint64, error) {
	return s.LatestTableVersion(ctx)
}

// pageParams reads limit (1..10000, default 100), offset and cursor.
func pageParams(c echo.Context) (limit, offset int, cursor string, err error) {
	limit, offset = 100, 0
	if v := c.QueryParam("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > 10_000 {
			return 0, 0, "", invalid("limit must be an integer between 1 and 10000")
		}
	}
	if v := c.QueryParam("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, "", invalid("offset must be a non-negative integer")
		}
	}
	cursor = c.QueryParam("cursor")
	if !utf8.ValidString(cursor) {
		return 0, 0, "", invalid("cursor must be valid UTF-8 (a next_cursor this API returned)")
	}
	return limit, offset, cursor, nil
}

// rowFilter is a list route's filter: JSON equalities ({"col": value}, ANDed), a SQL predicate,
// or neither.
type rowFilter struct {
	eq    map[string]any
	where predicate.Expr
}

// parseRowFilter reads a list route's filter parameter: a JSON object is equalities (checked by
// eq, which may restrict the columns); anything else is a SQL predicate over the store's user
// columns (comparisons, AND/OR/NOT, IN, BETWEEN, IS [NOT] NULL, LIKE).
func parseRowFilter(raw string, s *lsm.Store, eq func(string) (map[string]any, error)) (rowFilter, error) {
	if strings.TrimSpace(raw) == "" {
		return rowFilter{}, nil
	}
	if strings.HasPrefix(strings.TrimSpace(raw), "{") {
		m, err := eq(raw)
		return rowFilter{eq: m}, err
	}
	var user []arrow.Field
	for _, f := range s.Schema().Fields() {
		if !strings.HasPrefix(f.Name, "_") {
			user = append(user, f)
		}
	}
	where, err := predicate.Parse(raw, arrow.NewSchema(user, nil))
	if err != nil {
		return rowFilter{}, invalid("%v", err)
	}
	return rowFilter{where: where}, nil
}

// sourceParam reads ?source= (all, base or lance-context's fragments, wal; default all): the rows
// a listing or a query sees.
func sourceParam(c echo.Context) (lsm.Source, error) {
	src, err := lsm.ParseSource(c.QueryParam("source"))
	if err != nil {
		return 0, invalid("source must be all, base (or fragments) or wal")
	}
	return src, nil
}

// pageSource is where a read reads: a base-table version (0: the latest) or a read token's cut
// (snapshots.go), and the source.
type pageSource struct {
	version uint64
	cut     *lsm.Cut
	source  lsm.Source
}

// page reads limit rows after cursor, skipping the first offset matching rows; version > 0 reads
// a read-only checkout of that base-table version.
func (h *handlers) page(ctx context.Context, s *lsm.Store, columns []string, filter rowFilter, limit, offset int, cursor string, from pageSource) (arrow.RecordBatch, string, error) {
	filters := filter.eq
	for offset > 0 {
		p, err := s.Scan(ctx, lsm.ScanOptions{Columns: []string{s.KeyColumn()}, Filters: filters, Where: filter.where, After: cursor, Limit: min(offset, 10_000), Version: from.version, Cut: from.cut, Source: from.source})
		if err != nil {
			return nil, "", err
		}
		offset -= int(p.Rows.NumRows())
		p.Rows.Release()
		if p.Next == "" {
			return h.emptyBatch(s, columns), "", nil // the offset is past the end
		}
		cursor = p.Next
	}
	p, err := s.Scan(ctx, lsm.ScanOptions{Columns: columns, Filters: filters, Where: filter.where, After: cursor, Limit: limit, Version: from.version, Cut: from.cut, Source: from.source})
	if err != nil {
		return nil, "", err
	}
	return p.Rows, p.Next, nil
}

func (h *handlers) emptyBatch(s *lsm.Store, columns []string) arrow.RecordBatch {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		fields[i] = s.Schema().Field(s.Schema().FieldIndices(c)[0])
	}
	b := array.NewRecordBuilder(h.mem, arrow.NewSchema(fields, nil))
	defer b.Release()
	return b.NewRecordBatch()
}

// columnsExcept lists the store's user columns minus the excluded ones.
func columnsExcept(s *lsm.Store, exclude map[string]bool) []string {
	// Field(i), not Fields(): a point get runs this, and Fields copies the schema's fields.
	schema := s.Schema()
	out := make([]string, 0, schema.NumFields()) // one allocation, not one per doubling
	for i := range schema.NumFields() {
		if f := schema.Field(i); !strings.HasPrefix(f.Name, "_") && !exclude[f.Name] {
			out = append(out, f.Name)
		}
	}
	if len(out) == 0 {
		return nil // nil when nothing is left, as callers expect
	}
	return out
}
