// The record browser (rollout, generic and context stores): a page of rows through the API's
// listing (base table, WAL or both; the SQL filter; keyset pages, or offsets for contexts; a
// retained version), one record's JSON, and blob downloads.
package webui

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
)

// browsePage is the rows a browser page shows.
const browsePage = 50

// listing is how the API lists a kind: the rows route, the answer's member, the filter parameter.
type listing struct {
	rows, member, filter string
	keyset               bool // cursor pages (contexts page by offset)
}

func listingOf(k catalog.Kind) (listing, bool) {
	switch k {
	case catalog.KindRollout:
		return listing{"records", "records", "filters", true}, true
	case catalog.KindGeneric:
		return listing{"rows", "rows", "filter", true}, true
	case catalog.KindContext:
		return listing{"records", "records", "filters", false}, true
	}
	return listing{}, false
}

// browsed is the store a browser route names and how the API lists it; ok is false (and the
// answer a redirect to the store's page) for a kind without listings.
func browsed(c echo.Context) (ref storeRef, l listing, ok bool, err error) {
	if ref, err = storeOf(c); err != nil {
		return ref, l, false, err
	}
	if l, ok = listingOf(ref.Kind); !ok {
		return ref, l, false, c.Redirect(http.StatusSeeOther, ref.UIPath())
	}
	return ref, l, true, nil
}

func (u *UI) recordsPage(c echo.Context) error {
	ref, l, ok, err := browsed(c)
	if !ok {
		return err
	}
	source, filter, cursor, version, offset := c.QueryParam("source"), c.QueryParam("filter"), c.QueryParam("cursor"), c.QueryParam("version"), c.QueryParam("offset")
	data := map[string]any{"Title": ref.String() + " records", "Store": ref, "Source": source, "Filter": filter, "Version": version,
		"Keyset": l.keyset, "Sources": []string{"all", "base", "wal"}}
	q := url.Values{"limit": {"50"}}
	for k, v := range map[string]string{"source": source, l.filter: filter, "cursor": cursor, "version": version, "offset": offset} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var page map[string]json.RawMessage
	if err := u.callJSON(c, http.MethodGet, ref.apiPath(l.rows), q, nil, &page); err != nil {
		data["Error"] = errorData(err)
		return u.render(c, "records", data)
	}
	var raws []json.RawMessage
	_ = json.Unmarshal(page[l.member], &raws)
	columns, rows := table(raws)
	data["Columns"], data["Rows"] = columns, rows
	next := url.Values{}
	for k, v := range map[string]string{"source": source, "filter": filter, "version": version} {
		if v != "" {
			next.Set(k, v)
		}
	}
	if l.keyset {
		var nc string
		_ = json.Unmarshal(page["next_cursor"], &nc)
		if nc != "" {
			next.Set("cursor", nc)
			data["Next"] = ref.UIPath("records") + "?" + next.Encode()
		}
	} else if len(raws) == browsePage {
		n := 0
		_ = json.Unmarshal([]byte(offset), &n)
		next.Set("offset", itoa(n+browsePage))
		data["Next"] = ref.UIPath("records") + "?" + next.Encode()
	}
	return u.render(c, "records", data)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// browseRow is a row of the browser: its id and its cells, in the table's column order.
type browseRow struct {
	ID    string
	Cells []folded
}

// table lays rows out as columns (in the order the first rows name them) and cells.
func table(raws []json.RawMessage) ([]string, []browseRow) {
	var columns []string
	seen := map[string]bool{}
	objs := make([]map[string]json.RawMessage, len(raws))
	for i, raw := range raws {
		_ = json.Unmarshal(raw, &objs[i])
		for _, k := range orderedKeys(raw) {
			if !seen[k] {
				seen[k] = true
				columns = append(columns, k)
			}
		}
	}
	rows := make([]browseRow, len(raws))
	for i, o := range objs {
		var id string
		_ = json.Unmarshal(o["id"], &id)
		rows[i] = browseRow{ID: id, Cells: make([]folded, len(columns))}
		for j, col := range columns {
			if v, ok := o[col]; ok {
				rows[i].Cells[j] = cell(v)
			}
		}
	}
	return columns, rows
}

// orderedKeys are the members of a JSON object in the order they appear.
func orderedKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// recordPage shows one record's JSON and its blob downloads.
func (u *UI) recordPage(c echo.Context) error {
	ref, l, ok, err := browsed(c)
	if !ok {
		return err
	}
	id := c.QueryParam("id")
	data := map[string]any{"Title": ref.String() + " " + id, "Store": ref, "ID": id}
	var raw json.RawMessage
	q := url.Values{}
	if v := c.QueryParam("version"); v != "" {
		q.Set("version", v)
	}
	if err := u.callJSON(c, http.MethodGet, ref.apiPath(l.rows, id), q, nil, &raw); err != nil {
		data["Error"] = errorData(err)
		return u.render(c, "record", data)
	}
	var wrapped struct {
		Record json.RawMessage `json:"record"`
	}
	if ref.Kind != catalog.KindGeneric && json.Unmarshal(raw, &wrapped) == nil && len(wrapped.Record) > 0 {
		raw = wrapped.Record
	}
	data["JSON"] = pretty(raw)
	var blobs []string
	switch ref.Kind {
	case catalog.KindRollout, catalog.KindContext:
		blobs = []string{""}
	case catalog.KindGeneric:
		var info api.StoreInfo
		if u.callJSON(c, http.MethodGet, ref.apiPath(), nil, nil, &info) == nil {
			blobs = binaryColumns(info.Schema)
		}
	}
	var links []map[string]string
	for _, b := range blobs {
		q := url.Values{"id": {id}}
		label := "binary payload"
		if b != "" {
			q.Set("column", b)
			label = b
		}
		links = append(links, map[string]string{"Label": label, "Href": ref.UIPath("blob") + "?" + q.Encode()})
	}
	data["Blobs"] = links
	return u.render(c, "record", data)
}

// binaryColumns are a generic store's binary columns, from its schema spec.
func binaryColumns(spec json.RawMessage) []string {
	var s struct {
		Columns [][2]json.RawMessage `json:"columns"`
	}
	if json.Unmarshal(spec, &s) != nil {
		return nil
	}
	var out []string
	for _, col := range s.Columns {
		var name, typ string
		_ = json.Unmarshal(col[0], &name)
		if json.Unmarshal(col[1], &typ) != nil {
			var obj struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(col[1], &obj)
			typ = obj.Type
		}
		if typ == "binary" || typ == "large_binary" {
			out = append(out, name)
		}
	}
	return out
}

// blob downloads a record's payload: a rollout's binary payload and a context record's payload
// through their routes, a generic store's binary column from its row (base64 in JSON).
func (u *UI) blob(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	id := c.QueryParam("id")
	if id == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "id is required")
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+safeFilename(id)+`.bin"`)
	switch ref.Kind {
	case catalog.KindRollout:
		return u.proxy(c, http.MethodGet, ref.apiPath("records", id, "blob"), nil, nil)
	case catalog.KindContext:
		return u.proxy(c, http.MethodGet, ref.apiPath("records", id, "payload"), nil, nil)
	case catalog.KindGeneric:
		column := c.QueryParam("column")
		var row map[string]json.RawMessage
		if err := u.callJSON(c, http.MethodGet, ref.apiPath("rows", id), url.Values{"columns": {column}}, nil, &row); err != nil {
			return echo.NewHTTPError(http.StatusNotFound, errorData(err))
		}
		var b64 string
		if json.Unmarshal(row[column], &b64) != nil {
			return echo.NewHTTPError(http.StatusNotFound, "the row has no such blob")
		}
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return echo.NewHTTPError(http.StatusNotFound, "the row has no such blob")
		}
		return c.Blob(http.StatusOK, "application/octet-stream", data)
	}
	return echo.NewHTTPError(http.StatusNotFound, "this kind of store has no blobs here")
}

// safeFilename keeps a file name to letters, digits, '-', '_' and '.'.
func safeFilename(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r == '-' || r == '_' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
		if b.Len() >= 100 {
			break
		}
	}
	return b.String()
}
