// A view of a Store under a key prefix: each table lives under its own prefix of a shared store.
package objstore

import (
	"context"
	"strings"
)

// Prefixed is a Store whose keys are relative to prefix inside an underlying Store.
type Prefixed struct {
	inner  Store
	prefix string // ends with '/'
}

// WithPrefix returns the view of s under prefix (a valid key; a trailing '/' is added).
func WithPrefix(s Store, prefix string) (*Prefixed, error) {
	prefix = strings.TrimSuffix(prefix, "/")
	if err := Validate(prefix); err != nil {
		return nil, err
	}
	return &Prefixed{inner: s, prefix: prefix + "/"}, nil
}

func (p *Prefixed) full(key string) (string, error) {
	if err := Validate(key); err != nil {
		return "", err
	}
	return p.prefix + key, nil
}

func (p *Prefixed) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return p.inner.Get(ctx, k)
}

func (p *Prefixed) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return p.inner.GetRange(ctx, k, offset, length)
}

func (p *Prefixed) Put(ctx context.Context, key string, data []byte) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.inner.Put(ctx, k, data)
}

func (p *Prefixed) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.inner.PutIfAbsent(ctx, k, data)
}

func (p *Prefixed) List(ctx context.Context, prefix, startAfter string, limit int) (ListPage, error) {
	after := ""
	if startAfter != "" {
		after = p.prefix + startAfter
	}
	page, err := p.inner.List(ctx, p.prefix+prefix, after, limit)
	if err != nil {
		return ListPage{}, err
	}
	for i := range page.Objects {
		page.Objects[i].Key = strings.TrimPrefix(page.Objects[i].Key, p.prefix)
	}
	page.Next = strings.TrimPrefix(page.Next, p.prefix)
	return page, nil
}

func (p *Prefixed) ListAllKeys(ctx context.Context, prefix string) ([]string, error) {
	keys, err := ListAllKeys(ctx, p.inner, p.prefix+prefix)
	for i := range keys {
		keys[i] = strings.TrimPrefix(keys[i], p.prefix)
	}
	return keys, err
}

func (p *Prefixed) Delete(ctx context.Context, key string) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.inner.Delete(ctx, k)
}

func (p *Prefixed) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	k, err := p.full(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	info, err := p.inner.Stat(ctx, k)
	info.Key = key
	return info, err
}

func (p *Prefixed) ReadsInto() bool { return ReadsInto(p.inner) }

func (p *Prefixed) ReadRangeInto(ctx context.Context, key string, offset int64, buf []byte) (int, error) {
	k, err := p.full(key)
	if err != nil {
		return 0, err
	}
	return ReadRangeInto(ctx, p.inner, k, offset, buf)
}

func (p *Prefixed) WritesInPlace() bool { return WritesInPlace(p.inner) }

func (p *Prefixed) OpenWriter(ctx context.Context, key string, opts WriterOptions) (ObjectWriter, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return OpenWriter(ctx, p.inner, k, opts)
}
