// Opening an object store from a URL. Each URL scheme has an opener in a registry: file:// (and
// a plain directory path) is built in; other packages register theirs (the test doubles register
// memory://). Adding a backend is one file with a Store and a Register call.
package objstore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Opener opens the store a parsed URL names.
type Opener func(ctx context.Context, u *url.URL) (Store, error)

var (
	openersMu sync.RWMutex // guards openers
	openers   = map[string]Opener{"file": openLocal, "s3": openS3, "az": openAzure}
)

// Register makes Open serve URLs of scheme with open (replacing an earlier opener of scheme).
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	openers[scheme] = open
}

// ParseURL parses a store URL into its canonical form: a plain path becomes a file:// URL of its
// absolute path; a URL must have a registered scheme.
func ParseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("objstore: empty store URL")
	}
	if !strings.Contains(raw, "://") {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return nil, fmt.Errorf("objstore: %q: %w", raw, err)
		}
		return &url.URL{Scheme: "file", Path: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("objstore: %q is not a URL: %w", raw, err)
	}
	openersMu.RLock()
	_, ok := openers[u.Scheme]
	schemes := make([]string, 0, len(openers))
	for s := range openers {
		schemes = append(schemes, s+"://")
	}
	openersMu.RUnlock()
	if !ok {
		slices.Sort(schemes)
		return nil, fmt.Errorf("objstore: %q: unsupported scheme %q (supported: %s)", raw, u.Scheme, strings.Join(schemes, ", "))
	}
	if u.Scheme == "file" {
		// Everything after file:// is a path: file:///abs, or file://rel/dir relative to the
		// working directory (url.Parse would read "rel" as a host).
		abs, err := filepath.Abs(strings.TrimPrefix(raw, "file://"))
		if err != nil {
			return nil, fmt.Errorf("objstore: %q: %w", raw, err)
		}
		return &url.URL{Scheme: "file", Path: abs}, nil
	}
	return u, nil
}

// Open opens the store raw names (see ParseURL).
func Open(ctx context.Context, raw string) (Store, error) {
	u, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	openersMu.RLock()
	open := openers[u.Scheme]
	openersMu.RUnlock()
	return open(ctx, u)
}

func openLocal(_ context.Context, u *url.URL) (Store, error) { return NewLocal(u.Path) }
