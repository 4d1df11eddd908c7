// Record filters (lance-context's RecordFilters): built-in fields by equality, a creation-time
// range, and metadata keys by equality or {"contains": value}. A list, a search and a retrieve
// apply them before paging or ranking.
package contexts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Filters is a parsed filter document.
type Filters struct {
	// Fields are built-in string fields by equality (bot_id, session_id, role, content_type,
	// tenant, source): the read hands them to the store's scan as column equalities.
	Fields       map[string]string
	CreatedStart *time.Time
	CreatedEnd   *time.Time
	Metadata     map[string]metadataFilter
}

type metadataFilter struct {
	contains bool
	value    any // decoded with json.Number
}

// filterFields are the built-in fields a filter compares by equality.
var filterFields = map[string]bool{"bot_id": true, "session_id": true, "role": true, "content_type": true, "tenant": true, "source": true}

// MaxFilterKeys bounds a filter document.
const MaxFilterKeys = 64

// ParseFilters reads a filter document (absent or null: no filter). Errors are the caller's.
func ParseFilters(doc json.RawMessage) (Filters, error) {
	var f Filters
	if !present(doc) {
		return f, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		return f, fmt.Errorf("filters must be a JSON object")
	}
	if len(obj) > MaxFilterKeys {
		return f, fmt.Errorf("filters has %d keys, over the limit of %d", len(obj), MaxFilterKeys)
	}
	for key, raw := range obj {
		switch {
		case filterFields[key]:
			if !present(raw) {
				continue
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return f, fmt.Errorf("filter %q must be a string or null", key)
			}
			if f.Fields == nil {
				f.Fields = map[string]string{}
			}
			f.Fields[key] = s
		case key == "created_at":
			var bounds map[string]json.RawMessage
			if err := json.Unmarshal(raw, &bounds); err != nil {
				return f, fmt.Errorf("filter \"created_at\" must be an object with gte/lte bounds")
			}
			for op, v := range bounds {
				switch op {
				case "gte", "start", "after":
					if err := parseTime(key+"."+op, v, &f.CreatedStart); err != nil {
						return f, err
					}
				case "lte", "end", "before":
					if err := parseTime(key+"."+op, v, &f.CreatedEnd); err != nil {
						return f, err
					}
				default:
					return f, fmt.Errorf("unsupported created_at filter operator %q", op)
				}
			}
		case key == "created_at_start" || key == "created_after" || key == "created_at_gte":
			if err := parseTime(key, raw, &f.CreatedStart); err != nil {
				return f, err
			}
		case key == "created_at_end" || key == "created_before" || key == "created_at_lte":
			if err := parseTime(key, raw, &f.CreatedEnd); err != nil {
				return f, err
			}
		default:
			mf, err := parseMetadataFilter(raw)
			if err != nil {
				return f, fmt.Errorf("filter %q: %v", key, err)
			}
			if f.Metadata == nil {
				f.Metadata = map[string]metadataFilter{}
			}
			f.Metadata[key] = mf
		}
	}
	return f, nil
}

func parseTime(name string, raw json.RawMessage, dst **time.Time) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("filter %q must be an RFC 3339 timestamp string", name)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("filter %q: %v", name, err)
	}
	t = t.UTC()
	*dst = &t
	return nil
}

func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func parseMetadataFilter(raw json.RawMessage) (metadataFilter, error) {
	v, err := decodeValue(raw)
	if err != nil {
		return metadataFilter{}, err
	}
	if obj, ok := v.(map[string]any); ok && len(obj) == 1 {
		if c, ok := obj["contains"]; ok {
			return metadataFilter{contains: true, value: c}, nil
		}
	}
	return metadataFilter{value: v}, nil
}

// Match reports whether rec passes every filter. Its built-in fields are checked too (a scan
// that was handed Fields has already applied them; checking again costs a map lookup).
func (f *Filters) Match(rec *Record) bool {
	for k, want := range f.Fields {
		if got := fieldValue(rec, k); got == nil || *got != want {
			return false
		}
	}
	if f.CreatedStart != nil && rec.CreatedAt.Before(*f.CreatedStart) {
		return false
	}
	if f.CreatedEnd != nil && rec.CreatedAt.After(*f.CreatedEnd) {
		return false
	}
	if len(f.Metadata) == 0 {
		return true
	}
	if !present(rec.Metadata) {
		return false
	}
	doc, err := decodeValue(rec.Metadata)
	obj, ok := doc.(map[string]any)
	if err != nil || !ok {
		return false
	}
	for k, mf := range f.Metadata {
		got, ok := obj[k]
		if !ok {
			return false
		}
		if !mf.match(got) {
			return false
		}
	}
	return true
}

func (mf metadataFilter) match(got any) bool {
	if !mf.contains {
		return reflect.DeepEqual(got, mf.value)
	}
	switch g := got.(type) {
	case []any:
		for _, item := range g {
			if reflect.DeepEqual(item, mf.value) {
				return true
			}
		}
	case string:
		if want, ok := mf.value.(string); ok {
			return strings.Contains(g, want)
		}
	}
	return false
}

func fieldValue(rec *Record, name string) *string {
	switch name {
	case "bot_id":
		return rec.BotID
	case "session_id":
		return rec.SessionID
	case "role":
		return &rec.Role
	case "content_type":
		return &rec.ContentType
	case "tenant":
		return rec.Tenant
	case "source":
		return rec.Source
	}
	return nil
}
