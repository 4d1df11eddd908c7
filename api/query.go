// SQL over a store: POST /api/v1/<kind>/{name}/query {"sql": "SELECT …"} runs one read-only
// statement over a consistent snapshot of the store (the table t; lance-context's records view
// too) through the server's sqlquery.Runner (DuckDB in the strata binary), and answers its result
// as lance-context does ({"columns", "rows", "row_count", "truncated"}, rows as arrays aligned to
// columns), or, with ?format= (or an Accept header), as an Arrow IPC stream, CSV or Parquet.
//
// Bounds: the runner's own (memory, threads, time, queries at once: ErrBusy is 503 with
// Retry-After); a JSON answer holds at most QueryMaxRows rows and QueryMaxJSONBytes bytes (more
// set "truncated"); a streamed format at most QueryMaxStreamRows rows, silently (its status and
// headers are sent before its rows, so it cannot say so: the cap is documented instead).
package api

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/sqlquery"
	"github.com/strata-store/strata/storage/lsm"
)

// CodeInvalidSQL: the statement is not one read-only query, or the engine refused it (400, with
// the engine's message).
const CodeInvalidSQL = "INVALID_SQL"

// Default result bounds (Deps may set others).
const (
	defaultQueryMaxRows       = 10_000
	defaultQueryMaxJSONBytes  = 64 << 20
	defaultQueryMaxStreamRows = 1_000_000
)

// queryRequest is the body of the query route (lance-context's SqlQueryRequest, with Strata's
// source and row limit).
type queryRequest struct {
	SQL    string `json:"sql"`
	Source string `json:"source,omitempty"` // all (default), base (fragments), wal
	Limit  int    `json:"limit,omitempty"`  // the most rows answered (at most the server's cap)
	// Snapshot reads a read token's cut of the store (also ?snapshot=).
	Snapshot string `json:"snapshot,omitempty"`
}

// QueryResponse is the JSON answer of the query route (lance-context's SqlQueryResponse, plus
// the column types and the snapshot's base-table version).
type QueryResponse struct {
	Columns      []string `json:"columns"`
	Types        []string `json:"types"`
	Rows         [][]any  `json:"rows"`
	RowCount     int      `json:"row_count"`
	Truncated    bool     `json:"truncated"`
	TableVersion uint64   `json:"table_version"`
}

// queryFormat is the answer's encoding: ?format= first, then the Accept header.
func queryFormat(c echo.Context) (string, error) {
	switch f := strings.ToLower(c.QueryParam("format")); f {
	case "json", "arrow", "csv", "parquet":
		return f, nil
	case "":
	default:
		return "", invalid("format must be json, arrow, csv or parquet")
	}
	if wantsArrow(c) {
		return "arrow", nil
	}
	return "json", nil
}

// errQueryAnswerFull stops a query whose JSON answer reached its byte bound.
var errQueryAnswerFull = errors.New("the answer is full")

func (h *handlers) queryStore(kind catalog.Kind) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h.deps.SQL == nil {
			return &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "this server runs no SQL"}
		}
		format, err := queryFormat(c)
		if err != nil {
			return err
		}
		var req queryRequest
		if err := decodeBody(c, &req); err != nil {
			return err
		}
		if err := sqlquery.CheckStatement(req.SQL); err != nil {
			return err
		}
		source, err := lsm.ParseSource(req.Source)
		if err != nil {
			return invalid("source must be all, base (or fragments) or wal")
		}
		if req.Limit < 0 {
			return invalid("limit must not be negative")
		}
		if req.Snapshot != "" && c.QueryParam("snapshot") == "" {
			q := c.Request().URL.Query()
			q.Set("snapshot", req.Snapshot)
			c.Request().URL.RawQuery = q.Encode()
		}
		return h.withStore(c, kind, func(s *lsm.Store) error {
			cut, err := h.snapshotCut(c, kind)
			if err != nil {
				return err
			}
			if format == "json" {
				return h.queryJSON(c, s, sqlquery.Request{Statement: req.SQL, Source: source, Cut: cut, MaxRows: capRows(req.Limit, h.queryMaxRows())})
			}
			return h.queryStream(c, s, format, sqlquery.Request{Statement: req.SQL, Source: source, Cut: cut, MaxRows: capRows(req.Limit, h.queryMaxStreamRows())})
		})
	}
}

func capRows(asked, most int) int {
	if asked > 0 && asked < most {
		return asked
	}
	return most
}

func (h *handlers) queryMaxRows() int {
	if h.deps.QueryMaxRows > 0 {
		return h.deps.QueryMaxRows
	}
	return defaultQueryMaxRows
}

func (h *handlers) queryMaxStreamRows() int {
	if h.deps.QueryMaxStreamRows > 0 {
		return h.deps.QueryMaxStreamRows
	}
	return defaultQueryMaxStreamRows
}

// queryJSON answers the result as JSON, built before anything is sent (an error of the query is
// then still an error envelope), within QueryMaxJSONBytes.
func (h *handlers) queryJSON(c echo.Context, s *lsm.Store, req sqlquery.Request) error {
	maxBytes := h.deps.QueryMaxJSONBytes
	if maxBytes <= 0 {
		maxBytes = defaultQueryMaxJSONBytes
	}
	var rows bytes.Buffer
	var cols, types []string
	n, full := 0, false
	res, err := h.deps.SQL.Run(c.Request().Context(), s, req, func(rec arrow.RecordBatch) error {
		if cols == nil {
			cols, types = make([]string, 0, rec.NumCols()), make([]string, 0, rec.NumCols())
			for _, f := range rec.Schema().Fields() {
				cols, types = append(cols, f.Name), append(types, f.Type.String())
			}
		}
		for i := range int(rec.NumRows()) {
			mark := rows.Len()
			if n > 0 {
				rows.WriteByte(',')
			}
			rows.WriteByte('[')
			for j := range int(rec.NumCols()) {
				if j > 0 {
					rows.WriteByte(',')
				}
				writeJSONValue(&rows, rec.Column(j).GetOneForMarshal(i))
			}
			rows.WriteByte(']')
			if int64(rows.Len()) > maxBytes {
				rows.Truncate(mark)
				full = true
				return errQueryAnswerFull
			}
			n++
		}
		return nil
	})
	if err != nil && !errors.Is(err, errQueryAnswerFull) {
		return err
	}
	if cols == nil {
		cols, types = []string{}, []string{}
	}
	head, _ := json.Marshal(map[string]any{"columns": cols, "types": types})
	out := bufio.NewWriterSize(c.Response(), 64<<10)
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(http.StatusOK)
	out.Write(head[:len(head)-1]) // {"columns":…,"types":… without the closing brace
	out.WriteString(`,"rows":[`)
	out.Write(rows.Bytes())
	fmt.Fprintf(out, `],"row_count":%d,"truncated":%t,"table_version":%d}`+"\n", n, full || res.Truncated, res.TableVersion)
	return out.Flush()
}

// writeJSONValue writes v (an Arrow value as GetOneForMarshal gives it) as JSON: NaN and the
// infinities, which JSON has no numbers for, as strings.
func writeJSONValue(w *bytes.Buffer, v any) {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		w.WriteString(strconv.Quote(strconv.FormatFloat(f, 'g', -1, 64)))
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprint(v))
	}
	w.Write(b)
}

// queryStream answers the result as it comes (Arrow IPC, CSV or Parquet): the status is sent
// with the first batch, so a query that fails before it answers an error envelope, one that fails
// later ends the stream early (an Arrow stream without its end marker, a Parquet file without
// its footer).
func (h *handlers) queryStream(c echo.Context, s *lsm.Store, format string, req sqlquery.Request) error {
	res := c.Response()
	bw := bufio.NewWriterSize(res, 64<<10)
	var (
		arrowW   *ipc.Writer
		csvW     *csv.Writer
		parquetW *pqarrow.FileWriter
	)
	start := func(schema *arrow.Schema) error {
		switch format {
		case "arrow":
			res.Header().Set(echo.HeaderContentType, MIMEArrowStream)
		case "csv":
			res.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
			res.Header().Set(echo.HeaderContentDisposition, `attachment; filename="query.csv"`)
		case "parquet":
			res.Header().Set(echo.HeaderContentType, "application/vnd.apache.parquet")
			res.Header().Set(echo.HeaderContentDisposition, `attachment; filename="query.parquet"`)
		}
		res.WriteHeader(http.StatusOK)
		switch format {
		case "arrow":
			arrowW = ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(h.mem))
		case "csv":
			csvW = csv.NewWriter(bw)
			names := make([]string, schema.NumFields())
			for i, f := range schema.Fields() {
				names[i] = f.Name
			}
			return csvW.Write(names)
		case "parquet":
			var err error
			parquetW, err = pqarrow.NewFileWriter(schema, bw, parquet.NewWriterProperties(parquet.WithAllocator(h.mem)), pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(h.mem)))
			return err
		}
		return nil
	}
	started := false
	_, err := h.deps.SQL.Run(c.Request().Context(), s, req, func(rec arrow.RecordBatch) error {
		if !started {
			started = true
			if err := start(rec.Schema()); err != nil {
				return err
			}
		}
		switch format {
		case "arrow":
			return arrowW.Write(rec)
		case "csv":
			return writeCSV(csvW, rec)
		default:
			return parquetW.WriteBuffered(rec)
		}
	})
	if err != nil {
		return err
	}
	switch format {
	case "arrow":
		err = arrowW.Close()
	case "csv":
		csvW.Flush()
		err = csvW.Error()
	default:
		err = parquetW.Close()
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// writeCSV writes rec's rows: strings as they are, nulls empty, anything else as JSON.
func writeCSV(w *csv.Writer, rec arrow.RecordBatch) error {
	row := make([]string, rec.NumCols())
	var buf bytes.Buffer
	for i := range int(rec.NumRows()) {
		for j := range row {
			switch v := rec.Column(j).GetOneForMarshal(i).(type) {
			case nil:
				row[j] = ""
			case string:
				row[j] = v
			default:
				buf.Reset()
				writeJSONValue(&buf, v)
				row[j] = buf.String()
			}
		}
		if err := w.Write(row); err != nil {
			return err
		}
	}
	return nil
}
