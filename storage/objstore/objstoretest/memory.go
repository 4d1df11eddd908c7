// In-memory object store for tests: a sorted map under one mutex (held only for the map access,
// never across a blocking call).
package objstoretest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-store/strata/storage/objstore"
)

// Memory is an in-memory objstore.Store.
type Memory struct {
	mu      sync.Mutex
	objects map[string]memObject
}

type memObject struct {
	data    []byte
	modTime time.Time
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{objects: map[string]memObject{}} }

func (m *Memory) get(ctx context.Context, key string) (memObject, error) {
	if err := ctx.Err(); err != nil {
		return memObject{}, err
	}
	if err := objstore.Validate(key); err != nil {
		return memObject{}, err
	}
	m.mu.Lock()
	o, ok := m.objects[key]
	m.mu.Unlock()
	if !ok {
		return memObject{}, fmt.Errorf("%w: %s", objstore.ErrNotFound, key)
	}
	return o, nil
}

func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := m.get(ctx, key)
	if err != nil {
		return nil, err
	}
	return slices.Clone(o.data), nil
}

func (m *Memory) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	o, err := m.get(ctx, key)
	if err != nil {
		return nil, err
	}
	start, end, err := objstore.ClampRange(int64(len(o.data)), offset, length)
	if err != nil {
		return nil, err
	}
	return slices.Clone(o.data[start:end]), nil
}

func (m *Memory) put(ctx context.Context, key string, data []byte, ifAbsent bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := objstore.Validate(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok && ifAbsent {
		return fmt.Errorf("%w: %s", objstore.ErrExists, key)
	}
	m.objects[key] = memObject{data: slices.Clone(data), modTime: time.Now()}
	return nil
}

func (m *Memory) Put(ctx context.Context, key string, data []byte) error {
	return m.put(ctx, key, data, false)
}

func (m *Memory) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return m.put(ctx, key, data, true)
}

func (m *Memory) List(ctx context.Context, prefix, startAfter string, limit int) (objstore.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return objstore.ListPage{}, err
	}
	if limit <= 0 {
		limit = 1000
	}
	m.mu.Lock()
	var keys []string
	for k := range m.objects {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var page objstore.ListPage
	for _, k := range keys {
		if len(page.Objects) == limit {
			page.Next = page.Objects[limit-1].Key
			break
		}
		o := m.objects[k]
		page.Objects = append(page.Objects, objstore.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
	}
	m.mu.Unlock()
	return page, nil
}

func (m *Memory) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := objstore.Validate(key); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.objects, key)
	m.mu.Unlock()
	return nil
}

func (m *Memory) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	o, err := m.get(ctx, key)
	if err != nil {
		return objstore.ObjectInfo{}, err
	}
	return objstore.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// SetModTime backdates an object (tests of grace periods).
func (m *Memory) SetModTime(key string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objects[key]; ok {
		o.modTime = t
		m.objects[key] = o
	}
}

func (m *Memory) WritesInPlace() bool { return true }

func (m *Memory) OpenWriter(ctx context.Context, key string, _ objstore.WriterOptions) (objstore.ObjectWriter, error) {
	if _, err := m.get(ctx, key); err != nil {
		return nil, err
	}
	return &memWriter{m: m, key: key}, nil
}

// memWriter writes copy-on-write: readers hold the old slice, never a slice being changed.
type memWriter struct {
	m   *Memory
	key string
}

func (w *memWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if off < 0 {
		return fmt.Errorf("objstore: negative offset %d", off)
	}
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	o, ok := w.m.objects[w.key]
	if !ok {
		return fmt.Errorf("%w: %s", objstore.ErrNotFound, w.key)
	}
	end := off + int64(len(p))
	if off >= int64(len(o.data)) && end <= int64(cap(o.data)) {
		// Past the end, within the spare capacity: bytes no reader's slice covers (the spare
		// capacity is zeros, so a gap reads as zeros). Appends into an object cost amortized
		// O(bytes), not a copy of the whole object per write.
		data := o.data[:end]
		copy(data[off:], p)
		w.m.objects[w.key] = memObject{data: data, modTime: time.Now()}
		return nil
	}
	data := make([]byte, max(int64(len(o.data)), end), max(int64(len(o.data)), end, 2*int64(len(o.data))))
	copy(data, o.data)
	copy(data[off:], p)
	w.m.objects[w.key] = memObject{data: data, modTime: time.Now()}
	return nil
}

func (w *memWriter) Sync(ctx context.Context) error { return ctx.Err() }

func (w *memWriter) Close() error { return nil }

// memory://<name> opens the process's in-memory store of that name (created on first use), so
// code that opens stores by URL can run against memory in tests.
func init() { objstore.Register("memory", openMemory) }

var namedMemory sync.Map // name -> *Memory

func openMemory(_ context.Context, u *url.URL) (objstore.Store, error) {
	m, _ := namedMemory.LoadOrStore(u.Host+u.Path, NewMemory())
	return m.(*Memory), nil
}
