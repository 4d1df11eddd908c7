// The UI's one way to data: requests to the HTTP API, in process, as the signed-in person (their
// role's token), answered into a bounded buffer (a page's JSON) or straight to the browser (a
// download).
package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

// maxAnswerBytes bounds an API answer the UI reads into memory to render a page.
const maxAnswerBytes = 16 << 20

// apiError is an error answer of the API (its envelope), shown on the page.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// request is the API request for path (with query and a JSON body when set), as the page's
// person, on the page's context (a closed page stops it).
func (u *UI) request(c echo.Context, method, path string, query url.Values, body any, asRole string) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(data)
	}
	target := path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(c.Request().Context(), method, target, rd)
	if err != nil {
		return nil, err
	}
	req.Host = c.Request().Host // the API's allowed-hosts check sees the browser's host
	req.RemoteAddr = c.Request().RemoteAddr
	if body != nil {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	if t := u.keys.token(asRole); t != "" {
		req.Header.Set(echo.HeaderAuthorization, "Bearer "+t)
	}
	return req, nil
}

// callJSON sends the request and decodes a 2xx answer into out (when not nil); an error answer
// is an *apiError.
func (u *UI) callJSON(c echo.Context, method, path string, query url.Values, body, out any) error {
	req, err := u.request(c, method, path, query, body, role(c))
	if err != nil {
		return err
	}
	w := &bufferedAnswer{header: http.Header{}}
	u.opts.API.ServeHTTP(w, req)
	if w.overflow {
		return fmt.Errorf("the API's answer is larger than the UI reads (%d MiB)", maxAnswerBytes>>20)
	}
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 299 {
		var env struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(w.body.Bytes(), &env)
		return &apiError{Status: status, Code: env.Error.Code, Message: env.Error.Message}
	}
	if out == nil || w.body.Len() == 0 {
		return nil
	}
	return json.Unmarshal(w.body.Bytes(), out)
}

// proxy answers the browser with the API's answer to the request as it is (a download).
func (u *UI) proxy(c echo.Context, method, path string, query url.Values, body any) error {
	req, err := u.request(c, method, path, query, body, role(c))
	if err != nil {
		return err
	}
	u.opts.API.ServeHTTP(c.Response(), req)
	return nil
}

// bufferedAnswer is an http.ResponseWriter keeping up to maxAnswerBytes of the body.
type bufferedAnswer struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	overflow bool
}

func (b *bufferedAnswer) Header() http.Header { return b.header }
func (b *bufferedAnswer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}
func (b *bufferedAnswer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	if b.body.Len()+len(p) > maxAnswerBytes {
		b.overflow = true
		return 0, errors.New("answer too large")
	}
	return b.body.Write(p)
}
func (b *bufferedAnswer) Flush() {}
