// Signing in: a person pastes the API token (or the admin token) once; the UI answers a session
// cookie that names the role and its expiry, signed with that token (HMAC-SHA256), so every
// worker sharing the tokens accepts it and none keeps session state. The token itself is never
// in a cookie, a URL or a page; rotating a token ends the sessions it signed.
//
// CSRF: the cookie is HttpOnly and SameSite=Strict (a cross-site request carries none), every
// request that changes something is a POST that must carry htmx's HX-Request header (a cross-site
// form cannot set one; a cross-site script cannot without a CORS preflight, which the UI never
// answers), and the API's cross-origin guard refuses browser requests from another origin first.
package webui

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

const (
	sessionCookie = "strata_ui"
	sessionTTL    = 12 * time.Hour
	roleAdmin     = "admin" // maintenance buttons and state
	roleData      = "data"  // reading the stores
)

// sessionKeys are the tokens a session can be signed with, by role.
type sessionKeys struct {
	data, admin string // "" when the API has no such token
}

func newSessionKeys(apiToken, adminToken string) sessionKeys {
	if adminToken == "" {
		adminToken = apiToken // the API's admin routes take the API token then
	}
	return sessionKeys{data: apiToken, admin: adminToken}
}

// open reports whether the API takes no token at all (nobody signs in).
func (k sessionKeys) open() bool { return k.data == "" && k.admin == "" }

func (k sessionKeys) key(role string) string {
	if role == roleAdmin {
		return k.admin
	}
	return k.data
}

// token is the bearer token the UI's API calls carry for a role.
func (k sessionKeys) token(role string) string { return k.key(role) }

func sign(key, role string, expires int64) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("strata-ui-session|" + role + "|" + strconv.FormatInt(expires, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// cookieValue is a session of role until expires.
func (k sessionKeys) cookieValue(role string, expires time.Time) string {
	e := expires.Unix()
	return role + "." + strconv.FormatInt(e, 10) + "." + sign(k.key(role), role, e)
}

// verify returns the role of a cookie value, or "" when it is not a live session.
func (k sessionKeys) verify(v string, now time.Time) string {
	parts := strings.Split(v, ".")
	if len(parts) != 3 || (parts[0] != roleAdmin && parts[0] != roleData) || k.key(parts[0]) == "" {
		return ""
	}
	e, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || now.Unix() >= e {
		return ""
	}
	if !hmac.Equal([]byte(parts[2]), []byte(sign(k.key(parts[0]), parts[0], e))) {
		return ""
	}
	return parts[0]
}

// roleOf is the role of a token, or "".
func (k sessionKeys) roleOf(token string) string {
	eq := func(a, b string) bool { return b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
	switch {
	case eq(token, k.admin):
		return roleAdmin
	case eq(token, k.data):
		return roleData
	}
	return ""
}

// signedIn lets a request through with its role (the "role" context value), or sends it to
// the sign-in page.
func (u *UI) signedIn(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u.keys.open() {
			c.Set("role", roleAdmin)
			return next(c)
		}
		if ck, err := c.Cookie(sessionCookie); err == nil {
			if role := u.keys.verify(ck.Value, time.Now()); role != "" {
				c.Set("role", role)
				return next(c)
			}
		}
		to := "/ui/login?next=" + url.QueryEscape(c.Request().URL.RequestURI())
		if c.Request().Header.Get("HX-Request") != "" {
			c.Response().Header().Set("HX-Redirect", to)
			return c.NoContent(http.StatusUnauthorized)
		}
		return c.Redirect(http.StatusSeeOther, to)
	}
}

// sameOrigin refuses a state-changing request that did not come from the UI's own page: it must
// carry htmx's HX-Request header, which a cross-site form cannot send. A browser request from
// another origin (Origin, Sec-Fetch-Site) is refused before any route by the API's cross-origin
// guard, which the UI's routes share (api.New installs it on the whole server).
func (u *UI) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Header.Get("HX-Request") != "true" {
			return echo.NewHTTPError(http.StatusForbidden, "this request must come from the UI's own page")
		}
		return next(c)
	}
}

func role(c echo.Context) string { s, _ := c.Get("role").(string); return s }

func (u *UI) loginPage(c echo.Context) error {
	return u.render(c, "login", map[string]any{"Next": safeNext(c.QueryParam("next")), "Open": u.keys.open()})
}

func (u *UI) login(c echo.Context) error {
	token := c.FormValue("token")
	r := u.keys.roleOf(token)
	if r == "" {
		return u.render(c, "login-error", map[string]any{"Message": "that token is not one this server takes"})
	}
	expires := time.Now().Add(sessionTTL)
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: u.keys.cookieValue(r, expires), Path: "/ui/", Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.Request().TLS != nil})
	c.Response().Header().Set("HX-Redirect", safeNext(c.FormValue("next")))
	return c.NoContent(http.StatusNoContent)
}

func (u *UI) logout(c echo.Context) error {
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/ui/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	c.Response().Header().Set("HX-Redirect", "/ui/login")
	return c.NoContent(http.StatusNoContent)
}

// safeNext is where to go after signing in: a path of the UI, never another site.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/ui/"
}
