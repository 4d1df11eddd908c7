// The SQL console: one read-only statement over the store (the API's query route), its result as
// a table, and the same result as a CSV or Parquet download.
package webui

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/api"
)

// consoleRows is the most rows the console shows (a download has them all, up to the API's cap).
const consoleRows = 1000

func (u *UI) sqlPage(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	stmt := c.QueryParam("sql")
	if stmt == "" {
		stmt = "SELECT * FROM t LIMIT 100"
	}
	return u.render(c, "sql", map[string]any{"Title": ref.String() + " SQL", "Store": ref, "SQL": stmt,
		"Source": c.QueryParam("source"), "Sources": []string{"all", "base", "wal"}})
}

func (u *UI) sqlRun(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	stmt, source := c.FormValue("sql"), c.FormValue("source")
	var res api.QueryResponse
	err = u.callJSON(c, http.MethodPost, ref.apiPath("query"), nil, map[string]any{"sql": stmt, "source": source, "limit": consoleRows}, &res)
	if err != nil {
		return u.render(c, "sql-result", map[string]any{"Error": errorData(err)})
	}
	rows := make([][]folded, len(res.Rows))
	for i, r := range res.Rows {
		rows[i] = make([]folded, len(r))
		for j, v := range r {
			rows[i][j] = cell(v)
		}
	}
	q := url.Values{"sql": {stmt}, "source": {source}}
	csvQ, pqQ := url.Values{"format": {"csv"}}, url.Values{"format": {"parquet"}}
	for k, v := range q {
		csvQ[k], pqQ[k] = v, v
	}
	return u.render(c, "sql-result", map[string]any{"Result": res, "Rows": rows,
		"CSV": ref.UIPath("sql", "download") + "?" + csvQ.Encode(), "Parquet": ref.UIPath("sql", "download") + "?" + pqQ.Encode()})
}

// sqlDownload answers the statement's result as CSV or Parquet, streamed from the API.
func (u *UI) sqlDownload(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	format := c.QueryParam("format")
	if format != "csv" && format != "parquet" {
		return echo.NewHTTPError(http.StatusBadRequest, "format must be csv or parquet")
	}
	return u.proxy(c, http.MethodPost, ref.apiPath("query"), url.Values{"format": {format}},
		map[string]any{"sql": c.QueryParam("sql"), "source": c.QueryParam("source")})
}
