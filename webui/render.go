// Rendering: each page is the layout plus its own template (templates/<page>.html); partials
// (an htmx swap) are templates of their own. Helpers fold wide values and format what the API
// answers.
package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// partials render alone (an htmx swap); every other template is a page inside the layout.
var partials = map[string]bool{"login-error": true, "action-result": true, "sql-result": true}

var funcs = template.FuncMap{
	"fold":    fold,
	"cell":    cell,
	"pretty":  pretty,
	"ago":     ago,
	"bytes":   humanBytes,
	"took":    func(a, b time.Time) string { return b.Sub(a).Round(time.Millisecond).String() },
	"hasText": func(s string) bool { return strings.TrimSpace(s) != "" },
}

func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		page := strings.TrimSuffix(path.Base(n), ".html")
		if page == "layout" {
			continue
		}
		var t *template.Template
		if partials[page] {
			t, err = template.New(page+".html").Funcs(funcs).ParseFS(files, n)
		} else {
			t, err = template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", n)
		}
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", page, err)
		}
		pages[page] = t
	}
	return pages, nil
}

// render writes page with data (a map; the layout reads Title and the signed-in role from it).
func (u *UI) render(c echo.Context, page string, data map[string]any) error {
	t, ok := u.pages[page]
	if !ok {
		return fmt.Errorf("no template %q", page)
	}
	if data == nil {
		data = map[string]any{}
	}
	data["Role"] = role(c)
	data["SignIn"] = !u.keys.open()
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	return c.HTMLBlob(http.StatusOK, buf.Bytes())
}

// foldAt is the width past which a value is folded (its start shown, the rest behind a click).
const foldAt = 80

// folded is a value shown in a cell: Short, and Full when it was folded.
type folded struct {
	Short, Full string
}

func fold(s string) folded {
	r := []rune(s)
	if len(r) <= foldAt {
		return folded{Short: s}
	}
	full := s
	if len(full) > 64<<10 {
		full = string([]rune(full[:64<<10])) + "… (cut at 64 KiB: open the record for all of it)"
	}
	return folded{Short: string(r[:foldAt]) + "…", Full: full}
}

// cell is a JSON value as a cell shows it: a string as it is, null empty, anything else as JSON.
func cell(v any) folded {
	switch x := v.(type) {
	case nil:
		return folded{}
	case string:
		return fold(x)
	case json.RawMessage:
		var s string
		if json.Unmarshal(x, &s) == nil {
			return fold(s)
		}
		if string(x) == "null" {
			return folded{}
		}
		return fold(string(x))
	}
	b, _ := json.Marshal(v)
	return fold(string(b))
}

func pretty(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

func ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	d := time.Since(*t).Round(time.Second)
	return t.UTC().Format("2006-01-02 15:04:05") + " (" + d.String() + " ago)"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// errorData is what a page shows for a failed API call.
func errorData(err error) string {
	if ae, ok := err.(*apiError); ok {
		return fmt.Sprintf("%s (%d %s)", ae.Message, ae.Status, ae.Code)
	}
	return err.Error()
}
