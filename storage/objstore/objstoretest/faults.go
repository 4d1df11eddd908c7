// Fault injection for tests: a objstore.Store wrapper that can fail, slow down, hang until the caller's
// context is cancelled, or "crash" after N writes (every later write fails, as if the process
// died; reads keep working so a new process can inspect what was left behind).
package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/strata-store/strata/storage/objstore"
)

// ErrInjected is returned by injected failures.
var ErrInjected = errors.New("injected fault")

// ErrCrashed is returned by writes after the injected crash point.
var ErrCrashed = fmt.Errorf("injected crash: process is dead: %w", objstore.ErrStopped)

// Op names an operation for fault rules.
type Op string

const (
	OpGet         Op = "get"
	OpGetRange    Op = "get_range"
	OpPut         Op = "put"
	OpPutIfAbsent Op = "put_if_absent"
	OpList        Op = "list"
	OpDelete      Op = "delete"
	OpStat        Op = "stat"
	OpWriteAt     Op = "write_at" // an in-place write (objstore.ObjectWriter.WriteAt)
	OpSync        Op = "sync"     // objstore.ObjectWriter.Sync
)

func (o Op) isWrite() bool {
	return o == OpPut || o == OpPutIfAbsent || o == OpDelete || o == OpWriteAt || o == OpSync
}

// Rule decides what happens to one call. Match selects calls (nil matches all); at most Times
// matching calls are affected (0 = unlimited).
type Rule struct {
	Match   func(op Op, key string) bool
	Err     error         // fail with this error
	Latency time.Duration // sleep first (cut short by the context)
	Hang    bool          // block until the context is cancelled
	// Stuck, when set, blocks the call until it is closed, whatever the context says: a syscall
	// on a hung disk.
	Stuck <-chan struct{}
	Times int
	used  int
}

// Faulty wraps a objstore.Store with fault rules.
type Faulty struct {
	Inner objstore.Store

	mu         sync.Mutex
	rules      []*Rule
	crashAfter int // writes left before the crash; -1 = never
	crashed    bool
}

// NewFaulty wraps inner with no faults.
func NewFaulty(inner objstore.Store) *Faulty { return &Faulty{Inner: inner, crashAfter: -1} }

// AddRule installs a rule; rules are tried in order and the first match applies.
func (f *Faulty) AddRule(r Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, &r)
}

// CrashAfterWrites lets n more writes succeed, then fails every write with ErrCrashed.
func (f *Faulty) CrashAfterWrites(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAfter, f.crashed = n, false
}

// Reset removes every rule and the crash point.
func (f *Faulty) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules, f.crashAfter, f.crashed = nil, -1, false
}

// Crashed reports whether the crash point was reached.
func (f *Faulty) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// MatchKeyPrefix matches calls of the given ops (all ops when none) on keys with the prefix.
func MatchKeyPrefix(prefix string, ops ...Op) func(Op, string) bool {
	return func(op Op, key string) bool {
		if !strings.HasPrefix(key, prefix) {
			return false
		}
		if len(ops) == 0 {
			return true
		}
		for _, o := range ops {
			if o == op {
				return true
			}
		}
		return false
	}
}

// before applies the rules to one call; the mutex is never held while sleeping or hanging.
func (f *Faulty) before(ctx context.Context, op Op, key string) error {
	f.mu.Lock()
	if op.isWrite() {
		if f.crashed {
			f.mu.Unlock()
			return ErrCrashed
		}
		if f.crashAfter == 0 {
			f.crashed = true
			f.mu.Unlock()
			return ErrCrashed
		}
	}
	var rule Rule
	for _, r := range f.rules {
		if (r.Match == nil || r.Match(op, key)) && (r.Times == 0 || r.used < r.Times) {
			r.used++
			rule = *r
			break
		}
	}
	f.mu.Unlock()

	if rule.Stuck != nil {
		<-rule.Stuck
	}
	if rule.Hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if rule.Latency > 0 {
		t := time.NewTimer(rule.Latency)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return rule.Err
}

func (f *Faulty) wrote(op Op, err error) {
	if err != nil || !op.isWrite() {
		return
	}
	f.mu.Lock()
	if f.crashAfter > 0 {
		f.crashAfter--
	}
	f.mu.Unlock()
}

func (f *Faulty) Get(ctx context.Context, key string) ([]byte, error) {
	if err := f.before(ctx, OpGet, key); err != nil {
		return nil, err
	}
	return f.Inner.Get(ctx, key)
}

func (f *Faulty) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := f.before(ctx, OpGetRange, key); err != nil {
		return nil, err
	}
	return f.Inner.GetRange(ctx, key, offset, length)
}

func (f *Faulty) Put(ctx context.Context, key string, data []byte) error {
	if err := f.before(ctx, OpPut, key); err != nil {
		return err
	}
	err := f.Inner.Put(ctx, key, data)
	f.wrote(OpPut, err)
	return err
}

func (f *Faulty) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := f.before(ctx, OpPutIfAbsent, key); err != nil {
		return err
	}
	err := f.Inner.PutIfAbsent(ctx, key, data)
	f.wrote(OpPutIfAbsent, err)
	return err
}

func (f *Faulty) List(ctx context.Context, prefix, startAfter string, limit int) (objstore.ListPage, error) {
	if err := f.before(ctx, OpList, prefix); err != nil {
		return objstore.ListPage{}, err
	}
	return f.Inner.List(ctx, prefix, startAfter, limit)
}

func (f *Faulty) Delete(ctx context.Context, key string) error {
	if err := f.before(ctx, OpDelete, key); err != nil {
		return err
	}
	err := f.Inner.Delete(ctx, key)
	f.wrote(OpDelete, err)
	return err
}

func (f *Faulty) Stat(ctx context.Context, key string) (objstore.ObjectInfo, error) {
	if err := f.before(ctx, OpStat, key); err != nil {
		return objstore.ObjectInfo{}, err
	}
	return f.Inner.Stat(ctx, key)
}

func (f *Faulty) WritesInPlace() bool { return objstore.WritesInPlace(f.Inner) }

// OpenWriter opens a writer whose WriteAt and Sync go through the rules and count as writes
// for the crash point (a crash mid-segment leaves what was written before it).
func (f *Faulty) OpenWriter(ctx context.Context, key string, opts objstore.WriterOptions) (objstore.ObjectWriter, error) {
	w, err := objstore.OpenWriter(ctx, f.Inner, key, opts)
	if err != nil {
		return nil, err
	}
	return &faultyWriter{f: f, key: key, w: w}, nil
}

type faultyWriter struct {
	f   *Faulty
	key string
	w   objstore.ObjectWriter
}

func (fw *faultyWriter) WriteAt(ctx context.Context, p []byte, off int64) error {
	if err := fw.f.before(ctx, OpWriteAt, fw.key); err != nil {
		return err
	}
	err := fw.w.WriteAt(ctx, p, off)
	fw.f.wrote(OpWriteAt, err)
	return err
}

func (fw *faultyWriter) Sync(ctx context.Context) error {
	if err := fw.f.before(ctx, OpSync, fw.key); err != nil {
		return err
	}
	err := fw.w.Sync(ctx)
	fw.f.wrote(OpSync, err)
	return err
}

func (fw *faultyWriter) Close() error { return fw.w.Close() }
