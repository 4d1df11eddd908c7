// Where a store lives. By default under the server's data URL, at <kind>/<name>.<incarnation>;
// a store created with storage_options can live elsewhere: under another prefix of the data
// location ("prefix"), or in another S3 bucket ("bucket", with "endpoint", "region",
// "path_style" to reach it — credentials always come from the server's AWS environment). The
// store's URI (in the catalog) names the location; the options that say how to connect stay in
// the catalog row, never in URIs or logs.
package storecache

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/objstore"
)

// StorageOptionKeys are the storage_options a store may be created with.
var StorageOptionKeys = []string{"bucket", "prefix", "endpoint", "region", "path_style"}

// storageOptionsOf finds the storage options in a store's options document: the object itself
// (rollout stores) or its "storage_options" member (generic stores, whose options document also
// holds "seal_on_add").
func storageOptionsOf(options []byte) (map[string]string, error) {
	if len(options) == 0 || string(options) == "null" {
		return nil, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(options, &doc); err != nil {
		return nil, fmt.Errorf("%w: storage_options must be an object of strings", catalog.ErrInvalid)
	}
	_, nested := doc["storage_options"]
	_, generic := doc["seal_on_add"]
	if nested || generic { // a generic store's options: its storage options are one member
		options = doc["storage_options"]
		if len(options) == 0 {
			return nil, nil
		}
	}
	var out map[string]string
	if err := json.Unmarshal(options, &out); err != nil {
		return nil, fmt.Errorf("%w: storage_options must be an object of strings", catalog.ErrInvalid)
	}
	return out, nil
}

// validateStorageOptions checks every key and value (unknown keys are refused: a typo would
// otherwise put a store somewhere nobody meant).
func validateStorageOptions(opts map[string]string) error {
	for k, v := range opts {
		switch k {
		case "bucket":
			if v == "" || strings.ContainsAny(v, "/?#") {
				return fmt.Errorf("%w: storage_options bucket %q is not a bucket name", catalog.ErrInvalid, v)
			}
		case "prefix":
			if err := objstore.Validate(strings.Trim(v, "/")); err != nil || strings.ContainsAny(v, "?#% ") {
				return fmt.Errorf("%w: storage_options prefix %q: a relative path of safe segments", catalog.ErrInvalid, v)
			}
		case "endpoint":
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				return fmt.Errorf("%w: storage_options endpoint: want http(s)://host[:port]", catalog.ErrInvalid)
			}
		case "region":
			if v == "" || strings.ContainsAny(v, "/?#& ") {
				return fmt.Errorf("%w: storage_options region %q", catalog.ErrInvalid, v)
			}
		case "path_style":
			if _, err := strconv.ParseBool(v); err != nil {
				return fmt.Errorf("%w: storage_options path_style %q: want true or false", catalog.ErrInvalid, v)
			}
		default:
			return fmt.Errorf("%w: unknown storage_options key %q (known: %s; credentials come from the server's environment)",
				catalog.ErrInvalid, k, strings.Join(StorageOptionKeys, ", "))
		}
	}
	if _, ok := opts["bucket"]; !ok {
		for _, k := range []string{"endpoint", "region", "path_style"} {
			if _, set := opts[k]; set {
				return fmt.Errorf("%w: storage_options %s needs a bucket", catalog.ErrInvalid, k)
			}
		}
	}
	return nil
}

// locationFor is where a new store with opts lives (before <kind>/<name>.<incarnation>).
func (m *Manager) locationFor(opts map[string]string) string {
	base := m.rootURL
	if b, ok := opts["bucket"]; ok {
		base = "s3://" + b
	}
	if p := strings.Trim(opts["prefix"], "/"); p != "" {
		base += "/" + p
	}
	return base
}

// PublicURI is how st's location is shown to API clients. A store on the server's local
// filesystem is named relative to the data location (`rollout/tour.<incarnation>`, or
// `<prefix>/rollout/...` for a store created with a storage_options prefix), so no answer
// reveals the server's paths; a store in an object store keeps its full s3:// URI (a place
// clients with access to the bucket can reach, as lance-context answers).
func (m *Manager) PublicURI(st catalog.Store) string {
	if strings.HasPrefix(st.URI, "s3://") {
		return st.URI
	}
	if rel, ok := strings.CutPrefix(st.URI, m.rootURL+"/"); ok {
		return rel
	}
	return string(st.Kind) + "/" + st.Name // registered elsewhere: never a path of this server
}

// objectsOf opens the objects of a registered store: a view of the data location, or, for a
// store in a bucket of its own, that bucket reached with the store's storage options.
func (m *Manager) objectsOf(ctx context.Context, st catalog.Store) (objstore.Store, error) {
	if rel, ok := strings.CutPrefix(st.URI, m.rootURL+"/"); ok {
		return objstore.WithPrefix(m.root, rel)
	}
	if !strings.HasPrefix(st.URI, "s3://") {
		return nil, fmt.Errorf("store %s/%s lives at %s, outside this process's data location", st.Kind, st.Name, st.URI)
	}
	opts, err := storageOptionsOf(st.Options)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(st.URI)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, k := range []string{"endpoint", "region", "path_style"} {
		if v, ok := opts[k]; ok {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	objects, err := objstore.Open(ctx, u.String())
	if err != nil {
		return nil, err
	}
	return objstore.WithProgress(objstore.WithReadCache(objects, m.cfg.Store.Table.Cache, rewrittenKey)), nil
}
