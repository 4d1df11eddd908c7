// Local files: the path on this machine's disk of an object of a store that keeps its objects as
// files (a local directory, through the views and wrappers that keep keys as they are), for
// readers that open files themselves (DuckDB reading a store's fragments).
package objstore

import "path/filepath"

// LocalFiles is implemented by stores whose objects are files on a local disk.
type LocalFiles interface {
	// LocalPath is the file that holds key, or false when the object is not a local file.
	LocalPath(key string) (string, bool)
}

// LocalPath is the file holding key in s, or false when s keeps it elsewhere (an object store).
// It says where the file would be, not that it exists.
func LocalPath(s Store, key string) (string, bool) {
	if lf, ok := s.(LocalFiles); ok {
		return lf.LocalPath(key)
	}
	return "", false
}

// LocalPath is the file of key under the store's root.
func (l *Local) LocalPath(key string) (string, bool) {
	if Validate(key) != nil {
		return "", false
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), true
}

// LocalPath is the file of key in the store under the view.
func (p *Prefixed) LocalPath(key string) (string, bool) {
	k, err := p.full(key)
	if err != nil {
		return "", false
	}
	return LocalPath(p.inner, k)
}

// LocalPath is the file of key in the wrapped store.
func (c *ProgressCounting) LocalPath(key string) (string, bool) { return LocalPath(c.inner, key) }
