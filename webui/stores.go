// The stores page (every kind, searched by name prefix, with their maintenance state) and a
// store's page (schema, versions, maintenance state and buttons).
package webui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/workflows"
)

// storesShown is the most stores the stores page lists per kind.
const storesShown = 200

// storeRow is one store of the stores page.
type storeRow struct {
	Ref      storeRef
	Stats    *api.StoreStatus
	Failures []api.MaintenanceFailure
	Temporal string
}

func (u *UI) storesPage(c echo.Context) error {
	prefix, onlyKind := c.QueryParam("prefix"), c.QueryParam("kind")
	data := map[string]any{"Title": "Stores", "Prefix": prefix, "Kind": onlyKind}
	var kindNames []string
	var rows []storeRow
	var errs []string
	for _, k := range kinds.Served() {
		kindNames = append(kindNames, string(k.Name))
		if onlyKind != "" && onlyKind != string(k.Name) {
			continue
		}
		if role(c) == roleAdmin {
			var st api.StatusResponse
			q := url.Values{"kind": {string(k.Name)}, "limit": {strconv.Itoa(storesShown)}, "prefix": {prefix}}
			if err := u.callJSON(c, http.MethodGet, "/api/v1/admin/status", q, nil, &st); err != nil {
				errs = append(errs, string(k.Name)+": "+errorData(err))
				continue
			}
			for i := range st.Stores {
				ref := storeRef{Kind: k.Name, Name: st.Stores[i].Name, Route: k.Route}
				rows = append(rows, storeRow{Ref: ref, Stats: &st.Stores[i], Failures: failuresOf(st.Failures, ref), Temporal: u.temporalLink(ref)})
			}
			continue
		}
		var list api.StoreList
		q := url.Values{"limit": {strconv.Itoa(storesShown)}, "prefix": {prefix}}
		if err := u.callJSON(c, http.MethodGet, "/api/v1/"+k.Route, q, nil, &list); err != nil {
			errs = append(errs, string(k.Name)+": "+errorData(err))
			continue
		}
		for _, s := range list.Stores {
			ref := storeRef{Kind: k.Name, Name: s.Name, Route: k.Route}
			rows = append(rows, storeRow{Ref: ref, Temporal: u.temporalLink(ref)})
		}
	}
	data["Kinds"], data["Stores"], data["Errors"] = kindNames, rows, errs
	return u.render(c, "stores", data)
}

// tenantsPage lists the tenants with their usage, merge backlog and quotas (admin role).
func (u *UI) tenantsPage(c echo.Context) error {
	data := map[string]any{"Title": "Tenants"}
	if role(c) != roleAdmin {
		data["Errors"] = []string{"Sign in with the admin token to see the tenants."}
		return u.render(c, "tenants", data)
	}
	var t api.TenantsResponse
	if err := u.callJSON(c, http.MethodGet, "/api/v1/admin/tenants", url.Values{"limit": {"500"}}, nil, &t); err != nil {
		data["Errors"] = []string{errorData(err)}
	}
	data["Tenants"], data["Depth"], data["Separator"] = t.Tenants, t.TenantDepth, t.TenantSeparator
	return u.render(c, "tenants", data)
}

func failuresOf(all []api.MaintenanceFailure, ref storeRef) []api.MaintenanceFailure {
	var out []api.MaintenanceFailure
	for _, f := range all {
		if f.Kind == ref.Kind && f.Name == ref.Name {
			out = append(out, f)
		}
	}
	return out
}

// storeState is one store's maintenance state (admin role), from the catalog: its stats (nil when
// not observed yet), its failing operations and its last runs. The status listing by the
// store's name as prefix, one row, is the store's own: every other match sorts after it.
func (u *UI) storeState(c echo.Context, ref storeRef) (*api.StoreStatus, api.MaintenanceHistory, error) {
	var st api.StatusResponse
	q := url.Values{"kind": {string(ref.Kind)}, "prefix": {ref.Name}, "limit": {"1"}}
	if err := u.callJSON(c, http.MethodGet, "/api/v1/admin/status", q, nil, &st); err != nil {
		return nil, api.MaintenanceHistory{}, err
	}
	var stats *api.StoreStatus
	if len(st.Stores) == 1 && st.Stores[0].Name == ref.Name {
		stats = &st.Stores[0]
	}
	var history api.MaintenanceHistory
	err := u.callJSON(c, http.MethodGet, "/api/v1/admin/"+string(ref.Kind)+"/"+url.PathEscape(ref.Name)+"/history",
		url.Values{"limit": {"20"}}, nil, &history)
	return stats, history, err
}

func (u *UI) storePage(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	data := map[string]any{"Title": ref.String(), "Store": ref, "Temporal": u.temporalLink(ref)}
	var info api.StoreInfo
	if err := u.callJSON(c, http.MethodGet, ref.apiPath(), nil, nil, &info); err != nil {
		data["Error"] = errorData(err)
		return u.render(c, "store", data)
	}
	data["Info"] = info
	if len(info.Schema) > 0 {
		data["Schema"] = pretty(info.Schema)
	} else {
		data["Schema"] = schemaText(ref.Kind)
	}
	if info.Version != nil && *info.Version > 1 {
		var versions []uint64
		for v := *info.Version; v >= 1 && len(versions) < 10; v-- {
			versions = append(versions, v)
		}
		data["Versions"] = versions
	}
	if role(c) == roleAdmin {
		stats, history, err := u.storeState(c, ref)
		if err != nil {
			data["StateError"] = errorData(err)
		}
		data["Stats"], data["Failures"], data["History"] = stats, history.Failures, history.Runs
	}
	if ref.Kind == catalog.KindDatagen {
		var overview json.RawMessage
		if err := u.callJSON(c, http.MethodGet, ref.apiPath("overview"), nil, nil, &overview); err == nil {
			data["Overview"] = pretty(overview)
		}
	}
	return u.render(c, "store", data)
}

// schemaText is a built-in kind's schema as the page shows it: its columns and types.
func schemaText(k catalog.Kind) string {
	d, err := kinds.Of(k)
	if err != nil {
		return ""
	}
	schema, err := d.Schema(nil)
	if err != nil || schema == nil {
		return ""
	}
	var out string
	for _, f := range schema.Fields() {
		out += f.Name + "  " + f.Type.String() + "\n"
	}
	return out
}

// storeAction runs a button of the store page: flush (this worker seals), or a maintenance
// operation queued on the store's workflow (admin), and answers what happened.
func (u *UI) storeAction(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	action := c.Param("action")
	var msg string
	switch action {
	case "flush":
		err = u.callJSON(c, http.MethodPost, ref.apiPath("flush"), nil, nil, nil)
		msg = "Flushed: what this worker acknowledged is visible to every worker."
	case "merge_wal", "compact", "build_key_index", "cleanup_versions", "stats_refresh":
		if role(c) != roleAdmin {
			return u.render(c, "action-result", map[string]any{"Error": "maintenance takes the admin token: sign in with it"})
		}
		var res api.MaintenanceResponse
		err = u.callJSON(c, http.MethodPost, "/api/v1/admin/"+string(ref.Kind)+"/"+url.PathEscape(ref.Name)+"/maintenance",
			url.Values{"wait": {"true"}}, workflows.Request{Op: workflows.Op(action)}, &res)
		if err == nil {
			msg = "Done through the store's workflow " + res.WorkflowID
			if res.Result != nil {
				if b, jerr := json.Marshal(res.Result); jerr == nil {
					msg += ": " + string(b)
				}
			}
		}
	default:
		return echo.NewHTTPError(http.StatusNotFound, "no such action")
	}
	data := map[string]any{"Message": msg, "At": time.Now().UTC().Format("15:04:05")}
	if err != nil {
		data = map[string]any{"Error": errorData(err)}
	}
	c.Response().Header().Set("HX-Trigger", "store-changed")
	return u.render(c, "action-result", data)
}
