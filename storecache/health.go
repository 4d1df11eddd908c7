// What the store cache knows of this worker's health: whether its storage answers (a probe
// object written, read back and deleted), and which stores it can no longer write because another
// process with the same instance id claimed their write shards (fenced).
package storecache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/strata-store/strata/catalog"
)

// storageProbeTimeout bounds a storage probe: a hung disk makes the probe fail, not hang.
const storageProbeTimeout = 2 * time.Second

// storageProbeReuse: a probe result this recent answers the next health check too (a load
// balancer polling health every few hundred milliseconds costs one probe a second).
const storageProbeReuse = time.Second

// ProbeStorage writes, reads back and deletes a small object in the data directory. It answers
// within storageProbeTimeout even when a syscall blocks (the probe goroutine then ends when the
// syscall does; at most one probe runs at a time, so blocked probes never pile up).
func (m *Manager) ProbeStorage(ctx context.Context) error {
	m.probeMu.Lock()
	if time.Since(m.probeAt) < storageProbeReuse {
		err := m.probeErr
		m.probeMu.Unlock()
		return err
	}
	m.probeMu.Unlock()
	err := m.probeStorage(ctx)
	m.probeMu.Lock()
	m.probeAt, m.probeErr = time.Now(), err
	m.probeMu.Unlock()
	return err
}

func (m *Manager) probeStorage(ctx context.Context) error {
	select {
	case m.probing <- struct{}{}:
	default:
		return errors.New("the previous storage probe has not returned (storage hung)")
	}
	ctx, cancel := context.WithTimeout(ctx, storageProbeTimeout)
	done := make(chan error, 1)
	go func() {
		defer func() { <-m.probing }()
		defer cancel()
		done <- m.probeOnce(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("storage probe: %w", ctx.Err())
	}
}

// healthProbeDir holds each process's storage probe object (written, read back and deleted).
const healthProbeDir = "_health/"

func (m *Manager) probeOnce(ctx context.Context) error {
	sum := sha256.Sum256([]byte(m.cfg.Store.Instance))
	key := healthProbeDir + hex.EncodeToString(sum[:8])
	want := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	if err := m.root.Put(ctx, key, want); err != nil {
		return fmt.Errorf("storage probe write: %w", err)
	}
	got, err := m.root.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("storage probe read: %w", err)
	}
	if !bytes.Equal(got, want) {
		return errors.New("storage probe read back other bytes than it wrote")
	}
	if err := m.root.Delete(ctx, key); err != nil {
		return fmt.Errorf("storage probe delete: %w", err)
	}
	return nil
}

// ReportFenced records that this worker's write shard of a store was claimed by another process
// (with the same instance id) and logs it the first time only: every later append of the store on
// this worker fails the same way until an operator acts.
func (m *Manager) ReportFenced(kind catalog.Kind, name string) {
	if _, seen := m.fenced.LoadOrStore(cacheKey(kind, name), struct{}{}); seen {
		return
	}
	m.log.Error("another process with this worker's instance id claimed the store's write shard: appends to it fail here; give each process its own --instance-id and restart this worker",
		"kind", kind, "name", name, "instance", m.cfg.Store.Instance)
}

// FencedStores is how many stores ReportFenced has recorded.
func (m *Manager) FencedStores() int {
	n := 0
	m.fenced.Range(func(any, any) bool { n++; return true })
	return n
}
