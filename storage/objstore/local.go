// Local-filesystem object store. Durability: Put and PutIfAbsent write a temp file in the target
// directory, fsync it, then publish it (rename for Put, link for PutIfAbsent: link fails if the
// name exists, which makes the create atomic) and fsync the directory.
package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// tempPrefix marks in-flight temp files; List never returns them.
const tempPrefix = ".tmp-"

// Local is a Store rooted at a directory.
type Local struct {
	root string
}

// NewLocal returns a store rooted at dir, creating it if needed.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("objstore: create root %s: %w", abs, err)
	}
	return &Local{root: abs}, nil
}

// Root is the directory the store lives in.
func (l *Local) Root() string { return l.root }

func (l *Local) path(ctx context.Context, key string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := Validate(key); err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(key)), nil
}

func mapErr(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return err
}

func (l *Local) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := l.path(ctx, key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	return b, mapErr(key, err)
}

func (l *Local) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	p, err := l.path(ctx, key)
	if err != nil {
		return nil, err
	}
	f, err := openRead(p)
	if err != nil {
		return nil, mapErr(key, err)
	}
	defer f.Close()
	// A small range (a page a point read decodes) is allocated as asked and cut short by the
	// read, which stops at the end of the file; any other is clamped to the object's size first.
	start, size := offset, length
	if offset < 0 || length < 0 || length > unstatedRangeBytes {
		objectSize, err := f.Size()
		if err != nil {
			return nil, err
		}
		begin, end, err := ClampRange(objectSize, offset, length)
		if err != nil {
			return nil, err
		}
		start, size = begin, end-begin
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if n < len(buf) { // cut short by the end: hand back only what was read (callers cache it)
		buf = append([]byte(nil), buf[:n]...)
	}
	return buf, nil
}

// ReadsInto: a local file reads into any buffer.
func (l *Local) ReadsInto() bool { return true }

// ReadRangeInto fills buf from offset of key (fewer bytes only at the object's end).
func (l *Local) ReadRangeInto(ctx context.Context, key string, offset int64, buf []byte) (int, error) {
	p, err := l.path(ctx, key)
	if err != nil {
		return 0, err
	}
	if offset < 0 {
		return 0, fmt.Errorf("objstore: invalid range offset=%d of %s", offset, key)
	}
	f, err := openRead(p)
	if err != nil {
		return 0, mapErr(key, err)
	}
	defer f.Close()
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, err
	}
	return n, nil
}

// unstatedRangeBytes is the largest range GetRange reads without a stat: allocating it is safe
// whatever the object's size.
const unstatedRangeBytes = 1 << 20

// writeTemp writes data to a fsynced temp file next to p and returns its name.
func writeTemp(p string, data []byte) (string, error) {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, tempPrefix+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (l *Local) Put(ctx context.Context, key string, data []byte) error {
	p, err := l.path(ctx, key)
	if err != nil {
		return err
	}
	tmp, err := writeTemp(p, data)
	if err != nil {
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("objstore: put %s: %w", key, err)
	}
	return syncDir(filepath.Dir(p))
}

func (l *Local) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	p, err := l.path(ctx, key)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, key)
	}
	tmp, err := writeTemp(p, data)
	if err != nil {
		return fmt.Errorf("objstore: put-if-absent %s: %w", key, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("objstore: put-if-absent %s: %w", key, err)
	}
	return syncDir(filepath.Dir(p))
}

func (l *Local) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if limit <= 0 {
		limit = 1000
	}
	// Walk only the deepest directory the prefix names.
	base := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		base = prefix[:i]
	}
	if base != "" {
		if err := Validate(base); err != nil {
			return ListPage{}, err
		}
	}
	var keys []ObjectInfo
	walkRoot := filepath.Join(l.root, filepath.FromSlash(base))
	err := filepath.WalkDir(walkRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// p is walkRoot or below it: its key is base followed by what p adds to walkRoot.
		key := base + filepath.ToSlash(p[len(walkRoot):])
		if base == "" {
			key = strings.TrimPrefix(key, "/")
		}
		if d.IsDir() {
			// Skip directories that cannot hold a matching key after startAfter.
			if p != walkRoot && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), tempPrefix) || !strings.HasPrefix(key, prefix) || key <= startAfter {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		keys = append(keys, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return ListPage{}, fmt.Errorf("objstore: list %s: %w", prefix, err)
	}
	slices.SortFunc(keys, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	page := ListPage{Objects: keys}
	if len(keys) > limit {
		page.Objects = keys[:limit]
		page.Next = keys[limit-1].Key
	}
	return page, nil
}

// ListAllKeys is List without a stat of each file (KeyLister): the directories the prefix can
// match are read, unsorted, and only the keys are sorted.
func (l *Local) ListAllKeys(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	base := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		base = prefix[:i]
	}
	if base != "" {
		if err := Validate(base); err != nil {
			return nil, err
		}
	}
	var keys []string
	if err := l.listKeys(ctx, base, prefix, &keys); err != nil {
		return nil, fmt.Errorf("objstore: list %s: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// listKeys appends to keys the key of every file under the directory dir (a key; "" is the
// root) that starts with prefix, descending into the subdirectories that can hold such keys.
func (l *Local) listKeys(ctx context.Context, dir, prefix string, keys *[]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(filepath.Join(l.root, filepath.FromSlash(dir)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if errors.Is(err, syscall.ENOTDIR) {
		return nil // a file where the prefix names a directory: nothing under it
	}
	if err != nil {
		return err
	}
	for _, d := range entries {
		key := d.Name()
		if dir != "" {
			key = dir + "/" + key
		}
		if d.IsDir() {
			if strings.HasPrefix(key+"/", prefix) || strings.HasPrefix(prefix, key+"/") {
				if err := l.listKeys(ctx, key, prefix, keys); err != nil {
					return err
				}
			}
			continue
		}
		if strings.HasPrefix(d.Name(), tempPrefix) || !strings.HasPrefix(key, prefix) {
			continue
		}
		if len(*keys) == MaxListObjects {
			return tooManyKeys(prefix)
		}
		*keys = append(*keys, key)
	}
	return nil
}

func (l *Local) Delete(ctx context.Context, key string) error {
	p, err := l.path(ctx, key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("objstore: delete %s: %w", key, err)
	}
	return nil
}

func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	p, err := l.path(ctx, key)
	if err != nil {
		return ObjectInfo{}, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return ObjectInfo{}, mapErr(key, err)
	}
	return ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// ListDirs names the subdirectories of prefix (a directory key; "" is the root).
func (l *Local) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := l.root
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		if err := Validate(p); err != nil {
			return nil, err
		}
		dir = filepath.Join(l.root, filepath.FromSlash(p))
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: list dirs %s: %w", prefix, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
