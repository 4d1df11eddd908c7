// A datagen item: its folded state and its event timeline (the API's fold and events routes).
package webui

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

func (u *UI) datagenItemPage(c echo.Context) error {
	ref, err := storeOf(c)
	if err != nil {
		return err
	}
	item := c.QueryParam("item_id")
	data := map[string]any{"Title": ref.String() + " " + item, "Store": ref, "Item": item}
	if item == "" {
		return u.render(c, "item", data)
	}
	var folded, events json.RawMessage
	if err := u.callJSON(c, http.MethodGet, ref.apiPath("items", item), nil, nil, &folded); err != nil {
		data["Error"] = errorData(err)
		return u.render(c, "item", data)
	}
	var probe struct {
		Item json.RawMessage `json:"item"`
	}
	if json.Unmarshal(folded, &probe) == nil && (len(probe.Item) == 0 || string(probe.Item) == "null") {
		data["Missing"] = true
		return u.render(c, "item", data)
	}
	data["Folded"] = pretty(folded)
	if err := u.callJSON(c, http.MethodGet, ref.apiPath("items", item, "events"), nil, nil, &events); err != nil {
		data["Error"] = errorData(err)
		return u.render(c, "item", data)
	}
	var timeline struct {
		Events []json.RawMessage `json:"events"`
	}
	_ = json.Unmarshal(events, &timeline)
	columns, rows := table(timeline.Events)
	data["Columns"], data["Rows"] = columns, rows
	return u.render(c, "item", data)
}
