// Package fakemaint is a test double of the API's maintenance access (api.Maintainer) for tests
// that run the HTTP layer without Temporal.
package fakemaint

import (
	"context"
	"sync"

	"github.com/strata-store/strata/workflows"
)

// Maintainer records what it is asked and answers from its funcs (zero values without them).
type Maintainer struct {
	QueueFunc func(workflows.StoreRef, workflows.Request) (string, error)
	RunFunc   func(context.Context, workflows.StoreRef, workflows.Request) (workflows.ActivityResult, error)

	mu        sync.Mutex // guards the fields below
	running   []string
	available bool
}

// SetRunning sets the activity types Running reports.
func (m *Maintainer) SetRunning(types ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.running = types
}

// SetAvailable sets what Available reports.
func (m *Maintainer) SetAvailable(ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.available = ok
}

// Queue answers from QueueFunc ("run-1" without it).
func (m *Maintainer) Queue(_ context.Context, s workflows.StoreRef, r workflows.Request) (string, error) {
	if m.QueueFunc == nil {
		return "run-1", nil
	}
	return m.QueueFunc(s, r)
}

// Run answers from RunFunc (an empty result without it).
func (m *Maintainer) Run(ctx context.Context, s workflows.StoreRef, r workflows.Request) (workflows.ActivityResult, error) {
	if m.RunFunc == nil {
		return workflows.ActivityResult{}, nil
	}
	return m.RunFunc(ctx, s, r)
}

// Running reports what SetRunning set.
func (m *Maintainer) Running(context.Context, workflows.StoreRef) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running, nil
}

// Available reports what SetAvailable set.
func (m *Maintainer) Available(context.Context) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.available
}
