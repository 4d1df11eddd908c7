// Where a store lives. Storage locations are the operator's: the data URL (location "default")
// and the named locations of Config.Locations, each opened once at start with its own connection
// settings and credentials. A store lives in one of them, at
// <location>[/<prefix>]/<kind>/<name>.<incarnation>; a caller creating a store may only choose
// among the configured locations by name ("location") and a sub-path under one ("prefix") — never
// a host, a bucket, an endpoint or a credential — so no request ever reaches a server the
// operator did not configure.
//
// A store's URI (in the catalog) names where it lives; the location it lies under is found by
// that URI at open, never from options a caller sent. A store registered under a location the
// server no longer has configured (one created with an endpoint of its own before locations
// existed, say) does not open: it answers STORAGE_UNAVAILABLE until the operator configures a
// location whose URL contains it. Storage options are validated per kind with unknown keys
// refused, and a prefix can never place one store inside another's directory.
package storecache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/kinds"
	"github.com/strata-store/strata/storage/objstore"
)

// DefaultLocation names the data URL among the storage locations.
const DefaultLocation = "default"

// StorageOptionKeys are the storage_options a store may be created with.
var StorageOptionKeys = []string{"location", "prefix"}

// legacyStorageOptionKeys chose a host or a bucket; they are refused with a pointer to locations.
var legacyStorageOptionKeys = map[string]bool{"bucket": true, "endpoint": true, "region": true, "path_style": true}

// Limits on a storage_options prefix: each segment is a portable path segment and a valid S3
// key segment, the whole stays well inside every store's key-length limit.
const (
	maxPrefixSegment  = 128
	maxPrefixSegments = 8
)

// Location is a named place stores may live, configured by the operator: an object-store URL
// with its connection options (s3://bucket/prefix?endpoint=...&region=...&profile=...).
type Location struct {
	Name string
	URL  string
}

// ParseLocations reads the --storage-locations flag: "name=url" pairs separated by commas or
// whitespace. Names are 1-32 characters of [a-z0-9_-]; "default" is the data URL's.
func ParseLocations(spec string) ([]Location, error) {
	var out []Location
	for _, item := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		name, raw, ok := strings.Cut(item, "=")
		if !ok || raw == "" {
			return nil, fmt.Errorf("storage location %q: want name=url", item)
		}
		if err := validateLocationName(name); err != nil {
			return nil, err
		}
		if name == DefaultLocation {
			return nil, fmt.Errorf("storage location name %q is the data URL's (--data-url)", name)
		}
		if slices.ContainsFunc(out, func(l Location) bool { return l.Name == name }) {
			return nil, fmt.Errorf("storage location %q is named twice", name)
		}
		if _, err := objstore.ParseURL(raw); err != nil {
			return nil, fmt.Errorf("storage location %q: %w", name, err)
		}
		out = append(out, Location{Name: name, URL: raw})
	}
	return out, nil
}

func validateLocationName(name string) error {
	if name == "" || len(name) > 32 {
		return fmt.Errorf("storage location name %q: 1-32 characters of [a-z0-9_-]", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("storage location name %q: 1-32 characters of [a-z0-9_-]", name)
		}
	}
	return nil
}

// location is an opened storage location.
type location struct {
	name    string
	rootURL string           // its URL without connection options: the prefix of its stores' URIs
	objects objstore.Store   // its objects, wrapped as every store's are (read cache, progress)
	hedged  *objstore.Hedged // its hedged reads (nil on a store that writes in place)
}

// holds reports whether uri lies under the location, and the key prefix it has there.
func (l *location) holds(uri string) (string, bool) {
	return strings.CutPrefix(uri, l.rootURL+"/")
}

// openLocation opens raw as a location's objects, wrapped as every store's objects are; dirs is
// the unwrapped store when it can list directories.
func (m *Manager) openLocation(name, raw string) (*location, objstore.DirLister, error) {
	u, err := objstore.ParseURL(raw)
	if err != nil {
		return nil, nil, err
	}
	root, err := objstore.Open(context.Background(), u.String())
	if err != nil {
		return nil, nil, fmt.Errorf("storage location %q: %w", name, err)
	}
	objects := root
	var hedged *objstore.Hedged
	if !objstore.WritesInPlace(root) {
		// An object store (S3): objects never change once written, so reads are cached in the
		// process's object cache (a local disk has the page cache already), and a small read
		// slower than most is sent a second time (objstore.Hedged): a point get's p99 is not the
		// store's slowest request.
		hedged = objstore.WithHedgedReads(root)
		objects = objstore.WithReadCache(hedged, m.cfg.Store.Table.Cache, rewrittenKey)
	}
	if m.cfg.WrapObjects != nil {
		objects = m.cfg.WrapObjects(root)
	}
	// Every call is counted in the progress its context carries (the maintenance watchdog's).
	objects = objstore.WithProgress(objects)
	dirs, _ := root.(objstore.DirLister)
	// Stores' URIs name where they live, not how to connect: no query (endpoint, region, ...).
	bare := *u
	bare.RawQuery, bare.ForceQuery = "", false
	return &location{name: name, rootURL: bare.String(), objects: objects, hedged: hedged}, dirs, nil
}

// checkLocationsApart refuses locations of which one lies inside another: a store of the outer
// one could then be listed, adopted or purged through the inner one.
func checkLocationsApart(locs []*location) error {
	for _, a := range locs {
		for _, b := range locs {
			if a != b && (a.rootURL == b.rootURL || strings.HasPrefix(a.rootURL, b.rootURL+"/")) {
				return fmt.Errorf("storage location %q (%s) lies inside location %q (%s): locations must not overlap", a.name, a.rootURL, b.name, b.rootURL)
			}
		}
	}
	return nil
}

// Locations names the configured storage locations, "default" first.
func (m *Manager) Locations() []string {
	out := make([]string, len(m.locations))
	for i, l := range m.locations {
		out[i] = l.name
	}
	return out
}

// storeOptions are a store's options as a create request sends them for its kind: the storage
// options, and for generic stores seal_on_add.
type storeOptions struct {
	Storage   map[string]string
	SealOnAdd bool
}

// decodeStoreOptions reads a store's options document for its kind, refusing unknown keys and
// values of the wrong type: a rollout's or a datagen store's document is its storage options; a
// generic store's is {"storage_options": {...}, "seal_on_add": bool}.
func decodeStoreOptions(kind catalog.Kind, options []byte) (storeOptions, error) {
	var out storeOptions
	if len(bytes.TrimSpace(options)) == 0 || string(bytes.TrimSpace(options)) == "null" {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(options))
	dec.DisallowUnknownFields()
	if kind == catalog.KindGeneric {
		var doc struct {
			StorageOptions map[string]string `json:"storage_options"`
			SealOnAdd      bool              `json:"seal_on_add"`
		}
		if err := dec.Decode(&doc); err != nil {
			return out, fmt.Errorf("%w: options of a generic store: {\"storage_options\": {...}, \"seal_on_add\": bool} (%v)", catalog.ErrInvalid, err)
		}
		return storeOptions{Storage: doc.StorageOptions, SealOnAdd: doc.SealOnAdd}, nil
	}
	if kind == catalog.KindContext {
		var cfg kinds.ContextConfig
		if err := dec.Decode(&cfg); err != nil {
			return out, fmt.Errorf("%w: options of a context store: {\"embedding_dim\", \"distance_metric\", \"id_index_type\", \"blob_columns\", \"storage_options\"} (%v)", catalog.ErrInvalid, err)
		}
		if err := cfg.Validate(); err != nil {
			return out, fmt.Errorf("%w: %v", catalog.ErrInvalid, err)
		}
		return storeOptions{Storage: cfg.StorageOptions}, nil
	}
	if err := dec.Decode(&out.Storage); err != nil {
		return out, fmt.Errorf("%w: storage_options must be an object of strings", catalog.ErrInvalid)
	}
	return out, nil
}

// validateStorageOptions checks every key and value (unknown keys are refused: a typo would
// otherwise put a store somewhere nobody meant) and returns the location the options choose.
func (m *Manager) validateStorageOptions(opts map[string]string) (*location, error) {
	loc := m.locations[0]
	for k, v := range opts {
		switch {
		case k == "location":
			i := slices.IndexFunc(m.locations, func(l *location) bool { return l.name == v })
			if i < 0 {
				return nil, fmt.Errorf("%w: storage_options location %q is not one of this server's storage locations (%s)",
					catalog.ErrInvalid, v, strings.Join(m.Locations(), ", "))
			}
			loc = m.locations[i]
		case k == "prefix":
			if err := validateStoragePrefix(v); err != nil {
				return nil, err
			}
		case legacyStorageOptionKeys[k]:
			return nil, fmt.Errorf("%w: storage_options %q is not accepted: a store lives in one of the operator's storage locations, chosen by name with storage_options.location (%s) and an optional prefix",
				catalog.ErrInvalid, k, strings.Join(m.Locations(), ", "))
		default:
			return nil, fmt.Errorf("%w: unknown storage_options key %q (known: %s; credentials and endpoints are the operator's)",
				catalog.ErrInvalid, k, strings.Join(StorageOptionKeys, ", "))
		}
	}
	return loc, nil
}

// validateStoragePrefix checks a caller's prefix: at most maxPrefixSegments segments of
// [A-Za-z0-9._-], each 1-maxPrefixSegment bytes, none "." or "..", none a store kind's name and
// none shaped as a store's directory (<name>.<16 hex digits>) — so no prefix places a store
// inside another store's directory, or another store inside this one's.
func validateStoragePrefix(v string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: storage_options prefix %q: %s", catalog.ErrInvalid, v, why)
	}
	p := strings.Trim(v, "/")
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	if len(segs) > maxPrefixSegments {
		return bad(fmt.Sprintf("at most %d segments", maxPrefixSegments))
	}
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." || len(seg) > maxPrefixSegment {
			return bad(fmt.Sprintf("segments are 1-%d characters, not . or ..", maxPrefixSegment))
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return bad("segments are made of A-Z a-z 0-9 . _ -")
			}
		}
		if _, err := catalog.ParseKind(seg); err == nil {
			return bad(fmt.Sprintf("%q names a store kind (the directory its stores live in)", seg))
		}
		if isStoreDir(seg) {
			return bad(fmt.Sprintf("%q is shaped as a store's directory", seg))
		}
		if strings.HasPrefix(seg, "_") {
			return bad("segments starting with '_' belong to Strata")
		}
	}
	return nil
}

// isStoreDir reports whether seg has the shape of a store's directory: <name>.<16 hex digits>.
func isStoreDir(seg string) bool {
	i := strings.LastIndexByte(seg, '.')
	if i <= 0 || len(seg)-i-1 != 16 {
		return false
	}
	for _, c := range seg[i+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// storeBase is where a new store with storage options opts lives (before
// <kind>/<name>.<incarnation>).
func storeBase(loc *location, opts map[string]string) string {
	base := loc.rootURL
	if p := strings.Trim(opts["prefix"], "/"); p != "" {
		base += "/" + p
	}
	return base
}

// locationOf is the configured location st lies under (the innermost one) and its key prefix
// there.
func (m *Manager) locationOf(st catalog.Store) (*location, string, bool) {
	var best *location
	var rel string
	for _, l := range m.locations {
		if r, ok := l.holds(st.URI); ok && (best == nil || len(l.rootURL) > len(best.rootURL)) {
			best, rel = l, r
		}
	}
	return best, rel, best != nil
}

// PublicURI is how st's location is shown to API clients. A store on the server's local
// filesystem is named relative to its location (`rollout/tour.<incarnation>`, or
// `<prefix>/rollout/...` for a store created with a prefix; a named location's stores are
// `<location>:<path>`), so no answer reveals the server's paths; a store in an object store keeps
// its full s3:// URI (a place clients with access to the bucket can reach, as lance-context
// answers).
func (m *Manager) PublicURI(st catalog.Store) string {
	if strings.HasPrefix(st.URI, "s3://") {
		return st.URI
	}
	if l, rel, ok := m.locationOf(st); ok {
		if l.name == DefaultLocation {
			return rel
		}
		return l.name + ":" + rel
	}
	return string(st.Kind) + "/" + st.Name // registered elsewhere: never a path of this server
}

// objectsOf opens the objects of a registered store: a view of the configured location its URI
// lies under. A store under no configured location is a storage fault of that store.
func (m *Manager) objectsOf(_ context.Context, st catalog.Store) (objstore.Store, error) {
	l, rel, ok := m.locationOf(st)
	if !ok {
		return nil, fmt.Errorf("%w: store %s/%s lives outside every storage location this server is configured with (--data-url, --storage-locations)",
			objstore.ErrUnavailable, st.Kind, st.Name)
	}
	return objstore.WithPrefix(l.objects, rel)
}

// ReportStoresOutsideLocations logs (a warning naming up to 10 of them) the live stores registered
// under no location this process is configured with: stores created before locations existed with
// a bucket or endpoint of their own. They answer STORAGE_UNAVAILABLE until the operator adds a
// location whose URL contains them. It returns how many there are.
func (m *Manager) ReportStoresOutsideLocations(ctx context.Context) (int, error) {
	roots := make([]string, len(m.locations))
	for i, l := range m.locations {
		roots[i] = l.rootURL
	}
	n, some, err := m.cat.StoresOutside(ctx, roots, 10)
	if err != nil || n == 0 {
		return n, err
	}
	names := make([]string, len(some))
	for i, st := range some {
		names[i] = string(st.Kind) + "/" + st.Name + " (" + st.URI + ")"
	}
	m.log.Warn("stores registered outside every configured storage location cannot be opened; add a --storage-locations entry whose URL contains them",
		"count", n, "stores", strings.Join(names, ", "))
	return n, nil
}
