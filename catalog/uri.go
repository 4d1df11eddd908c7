// Store URIs: what a registry row may name as a store's place. A row is checked before it is
// inserted, so no row is written that could not be opened, purged or shown: the URI is a URL
// that round-trips, an s3:// or gs:// bucket and an az:// container follow their service's
// naming rules, and every path segment is a portable file name.
package catalog

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// MaxURILength bounds a store's URI.
const MaxURILength = 2048

// maxURISegment is the longest path segment a URI may hold (a file name on every common file
// system).
const maxURISegment = 255

// ValidateURI checks a store URI before it is registered.
func ValidateURI(uri string) error {
	bad := func(why string) error { return fmt.Errorf("%w: store URI %q: %s", ErrInvalid, truncate(uri, 200), why) }
	if uri == "" || len(uri) > MaxURILength {
		return bad(fmt.Sprintf("1-%d bytes", MaxURILength))
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return bad("a URL without query, fragment or user")
	}
	if u.String() != uri || u.RawPath != "" {
		return bad("not in canonical form (it would not name the same place when read back)")
	}
	switch u.Scheme {
	case "s3":
		if err := validateBucket(u.Host); err != nil {
			return bad(err.Error())
		}
	case "az":
		if err := validateContainer(u.Host); err != nil {
			return bad(err.Error())
		}
	case "gs":
		// GCS bucket names are S3's with '_' allowed besides.
		if err := validateBucket(strings.ReplaceAll(u.Host, "_", "-")); err != nil {
			return bad(err.Error())
		}
	case "file":
		if u.Host != "" {
			return bad("a file URI has no host")
		}
	}
	for _, seg := range strings.Split(strings.Trim(u.Path, "/"), "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return bad("empty, . or .. path segment")
		case len(seg) > maxURISegment:
			return bad(fmt.Sprintf("a path segment is longer than %d bytes", maxURISegment))
		case strings.ContainsAny(seg, "\\\x00"):
			return bad("a path segment holds a backslash or NUL")
		}
	}
	return nil
}

// validateContainer checks an Azure Blob container name: 3-63 characters of lowercase letters,
// digits and '-', starting and ending with a letter or digit, no "--".
func validateContainer(c string) error {
	if len(c) < 3 || len(c) > 63 {
		return fmt.Errorf("container name %q: 3-63 characters", c)
	}
	for i := 0; i < len(c); i++ {
		if ch := c[i]; !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return fmt.Errorf("container name %q: lowercase letters, digits and '-' only", c)
		}
	}
	if c[0] == '-' || c[len(c)-1] == '-' || strings.Contains(c, "--") {
		return fmt.Errorf("container name %q: starts and ends with a letter or digit, no \"--\"", c)
	}
	return nil
}

// validateBucket checks an S3 bucket name: 3-63 characters of lowercase letters, digits, '.'
// and '-', starting and ending with a letter or digit, no "..", not an IP address.
func validateBucket(b string) error {
	if len(b) < 3 || len(b) > 63 {
		return fmt.Errorf("bucket name %q: 3-63 characters", b)
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return fmt.Errorf("bucket name %q: lowercase letters, digits, '.' and '-' only", b)
		}
	}
	first, last := b[0], b[len(b)-1]
	if !(first >= 'a' && first <= 'z' || first >= '0' && first <= '9') || !(last >= 'a' && last <= 'z' || last >= '0' && last <= '9') {
		return fmt.Errorf("bucket name %q: starts and ends with a letter or digit", b)
	}
	if strings.Contains(b, "..") {
		return fmt.Errorf("bucket name %q: no \"..\"", b)
	}
	dots := strings.Count(b, ".")
	if dots == 3 && strings.Trim(b, "0123456789.") == "" {
		return fmt.Errorf("bucket name %q: not an IP address", b)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// StoresWithin lists the stores (live or deleted, not purged) registered strictly inside the
// directory uri names (their URIs start with uri + "/"), at most limit: purge and adoption must
// never cross into them.
func (c *Catalog) StoresWithin(ctx context.Context, uri string, limit int) ([]Store, error) {
	lo, hi := uri+"/", uri+"0" // '0' is the byte after '/': every URI with the prefix lies in [lo, hi)
	rows, err := c.pool.Query(ctx, `SELECT `+storeColumns+` FROM stores
		WHERE (uri COLLATE "C") >= $1 AND (uri COLLATE "C") < $2 ORDER BY (uri COLLATE "C") LIMIT $3`, lo, hi, limit)
	if err != nil {
		return nil, errorf("catalog: stores within %s: %w", uri, err)
	}
	out, err := pgx.CollectRows(rows, scanStoreRow)
	if err != nil {
		return nil, errorf("catalog: stores within %s: %w", uri, err)
	}
	return out, nil
}

// StoreContaining is the store (live or deleted, not purged) whose directory holds uri (uri
// starts with its URI + "/"), if any.
func (c *Catalog) StoreContaining(ctx context.Context, uri string) (Store, bool, error) {
	var prefixes []string
	for i := strings.IndexByte(uri, '/'); i >= 0; {
		prefixes = append(prefixes, uri[:i])
		j := strings.IndexByte(uri[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	if len(prefixes) == 0 {
		return Store{}, false, nil
	}
	rows, err := c.pool.Query(ctx, `SELECT `+storeColumns+` FROM stores WHERE uri = ANY($1) LIMIT 1`, prefixes)
	if err != nil {
		return Store{}, false, errorf("catalog: store containing %s: %w", uri, err)
	}
	found, err := pgx.CollectRows(rows, scanStoreRow)
	if err != nil {
		return Store{}, false, errorf("catalog: store containing %s: %w", uri, err)
	}
	if len(found) == 0 {
		return Store{}, false, nil
	}
	return found[0], true, nil
}

func scanStoreRow(r pgx.CollectableRow) (Store, error) { return scanStore(r) }

// StoresOutside counts the live stores whose URI lies under none of roots (each a location's URL:
// a store lies under it when its URI starts with it and "/"), and returns up to limit of them:
// stores a server configured with those locations cannot open.
func (c *Catalog) StoresOutside(ctx context.Context, roots []string, limit int) (int, []Store, error) {
	prefixes := make([]string, len(roots))
	for i, r := range roots {
		prefixes[i] = r + "/"
	}
	const outside = `deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM unnest($1::text[]) p WHERE starts_with(uri, p))`
	var n int
	if err := c.pool.QueryRow(ctx, `SELECT count(*) FROM stores WHERE `+outside, prefixes).Scan(&n); err != nil {
		return 0, nil, errorf("catalog: stores outside the locations: %w", err)
	}
	rows, err := c.pool.Query(ctx, `SELECT `+storeColumns+` FROM stores WHERE `+outside+` ORDER BY name, kind LIMIT $2`, prefixes, limit)
	if err != nil {
		return 0, nil, errorf("catalog: stores outside the locations: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanStoreRow)
	if err != nil {
		return 0, nil, errorf("catalog: stores outside the locations: %w", err)
	}
	return n, out, nil
}
