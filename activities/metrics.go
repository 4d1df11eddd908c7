// Maintenance outcome metrics: every store activity counted by activity type and outcome, and
// its duration. Labels are bounded (activity types x outcomes); never per store.
package activities

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/strata-store/strata/workflows"
)

// Metrics are the maintenance activities' Prometheus collectors.
type Metrics struct {
	runs         *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	purgeFailure prometheus.Counter
}

// NewMetrics registers the collectors with reg (nil: unregistered, still counted).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_maintenance_activities_total",
			Help: "Maintenance activity attempts by activity type and outcome (success, error, canceled, store_gone).",
		}, []string{"activity", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_maintenance_activity_duration_seconds",
			Help:    "Duration of maintenance activity attempts by activity type.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10),
		}, []string{"activity"}),
		purgeFailure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_registry_purge_failures_total",
			Help: "Deleted stores registry cleanup could not purge (each is reported, logged and tried again after the others).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.duration, m.purgeFailure)
	}
	return m
}

// purgeFailed counts a store registry cleanup could not purge.
func (m *Metrics) purgeFailed() {
	if m != nil {
		m.purgeFailure.Inc()
	}
}

// observe records one attempt of the activity running in ctx.
func (m *Metrics) observe(ctx context.Context, start time.Time, err error) {
	if m == nil {
		return
	}
	name := activity.GetInfo(ctx).ActivityType.Name
	m.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
	m.runs.WithLabelValues(name, outcome(ctx, err)).Inc()
}

func outcome(ctx context.Context, err error) string {
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return "success"
	case errors.As(err, &app) && app.Type() == workflows.ErrStoreGone:
		return "store_gone"
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}
