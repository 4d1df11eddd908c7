// `strata worker`: the Temporal maintenance worker (task queue strata-maintenance). It opens
// stores like `strata serve` does (same catalog, data directory and merge budget flags) and runs
// the per-store maintenance workflows' activities. `strata serve --maintenance-worker` hosts the
// same worker inside the API process.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/activities"
	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// temporalConfig are the settings shared by everything that talks to Temporal.
type temporalConfig struct {
	Address       string
	Namespace     string
	ActivitySlots int
	SweepInterval time.Duration
	VersionTTL    time.Duration
	StallTimeout  time.Duration
	// Sweep thresholds (the strata-sweep schedule's input) and the compaction config.
	Sweep      workflows.SweepInput
	Compaction table.CompactionConfig
}

func (c *temporalConfig) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.Address, "temporal-address", "127.0.0.1:7233", "Temporal frontend host:port")
	fs.StringVar(&c.Namespace, "temporal-namespace", "default", "Temporal namespace")
	fs.IntVar(&c.ActivitySlots, "activity-slots", 4, "maintenance activities run at once by this worker")
	fs.DurationVar(&c.VersionTTL, "version-ttl", time.Hour, "table versions younger than this survive version cleanup (the latest always does), and so do unreferenced files younger than it")
	fs.DurationVar(&c.StallTimeout, "stall-timeout", activities.DefaultStallTimeout, "a maintenance activity that makes no progress (no storage call finishes, no phase advances) this long is abandoned and retried")
	fs.IntVar(&c.Sweep.MinPendingGenerations, "sweep-min-pending-generations", 8, "the sweep merges a store with this many pending generations in a shard")
	fs.DurationVar(&c.Sweep.StaleAfter, "sweep-stale-after", 5*time.Minute, "the sweep merges a store whose oldest pending generation is this old, however few")
	fs.IntVar(&c.Sweep.MinVersionsToClean, "sweep-cleanup-after-versions", 64, "the sweep queues version cleanup for a store whose table moved this many versions since its last cleanup")
	fs.Int64Var(&c.Sweep.MinGarbageBytes, "sweep-cleanup-after-garbage-bytes", 64<<20, "the sweep queues version cleanup for a store holding this many bytes of files its table no longer references")
	fs.Float64Var(&c.Sweep.GarbageRatio, "sweep-cleanup-garbage-ratio", 1, "the sweep queues version cleanup for a store whose garbage is this share of its table's bytes, a version TTL after its last cleanup")
	fs.DurationVar(&c.Sweep.StatsStaleAfter, "sweep-stats-stale-after", 10*time.Minute, "the sweep refreshes stats not observed for this long")
	fs.IntVar(&c.Sweep.MaxStatsRefreshes, "sweep-max-stats-refreshes", 128, "stats refreshes of idle or never-observed stores one sweep queues at most (they queue behind nothing, but merges queue behind them)")
	fs.IntVar(&c.Sweep.MaxRequests, "sweep-max-requests", 1024, "requests one sweep queues at most (hottest stores first, shared round-robin across tenants weighted by their quota weight)")
	fs.DurationVar(&c.Sweep.RequeueAfter, "sweep-requeue-after", catalog.DefaultRequeueAfter, "a store a sweep queued is not queued again until its maintenance has run or this long has passed, so sweeps page through a backlog larger than --sweep-max-requests")
	fs.IntVar(&c.Compaction.MinFragments, "compact-min-fragments", 4, "compaction rewrites small fragments only when at least this many")
	fs.Int64Var(&c.Compaction.TargetRowsPerFragment, "compact-target-rows", table.DefaultTargetRowsPerFragment, "rows per fragment compaction aims for (smaller fragments are candidates, and a merge of fewer rows writes its fragment uncompressed: compaction compresses it)")
	fs.DurationVar(&c.Compaction.CompressIdleAfter, "compact-idle-after", table.DefaultCompressIdleAfter, "a store whose table has had no commit this long has every fragment of 1 MiB or more that a merge wrote uncompressed compacted (compressed), without waiting for its size tier (negative: never)")
	fs.DurationVar(&c.SweepInterval, "sweep-interval", 30*time.Second, "interval of the strata-sweep Temporal Schedule; it and the hourly strata-registry-cleanup are created at worker start if missing, and updated when this changed (0 = leave them alone)")
}

func dialTemporal(cfg temporalConfig, log *slog.Logger, metrics client.MetricsHandler) (client.Client, error) {
	c, err := client.Dial(client.Options{HostPort: cfg.Address, Namespace: cfg.Namespace, Logger: log, MetricsHandler: metrics})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.Address, err)
	}
	return c, nil
}

// startMaintenanceWorker starts the maintenance worker; stop it with the returned function.
func startMaintenanceWorker(cfg temporalConfig, mgr *storecache.Manager, reg prometheus.Registerer, sdkMetrics client.MetricsHandler, log *slog.Logger) (func(), error) {
	c, err := dialTemporal(cfg, log, sdkMetrics)
	if err != nil {
		return nil, err
	}
	if cfg.SweepInterval > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sweep := cfg.Sweep
		sweep.VersionTTL = cfg.VersionTTL // garbage younger than it cannot be deleted: cleanups wait for it
		err := worker.EnsureSchedules(ctx, c, cfg.SweepInterval, sweep)
		cancel()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("create the maintenance schedules: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = worker.EnsureSearchAttributes(ctx, c, cfg.Namespace)
	cancel()
	if err != nil {
		log.Warn("store workflows will not set the StrataFailing/StrataLastError search attributes (failing stores are listed by `strata status`)", "err", err)
	}
	sweep := cfg.Sweep.WithDefaults()
	acts := &activities.Activities{Stores: mgr, Metrics: activities.NewMetrics(reg), SearchAttributes: err == nil,
		Tenancy:      catalog.Tenancy{Depth: max(sweep.TenantDepth, 0), Separator: sweep.TenantSeparator},
		StallTimeout: cfg.StallTimeout, Compaction: cfg.Compaction, Cleanup: table.CleanupOptions{OlderThan: cfg.VersionTTL, Grace: cfg.VersionTTL}}
	w := worker.New(c, acts, worker.Options{ActivitySlots: cfg.ActivitySlots})
	if err := w.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("start maintenance worker: %w", err)
	}
	log.Info("maintenance worker running", "temporal", cfg.Address, "task_queue", "strata-maintenance", "slots", cfg.ActivitySlots)
	return func() { w.Stop(); c.Close() }, nil
}

// workerCommandConfig is the runtime configuration `strata worker` starts from, before flags: a
// maintenance worker never appends, so it opens stores read-only.
func workerCommandConfig() serveConfig { return serveConfig{readOnlyStores: true} }

func workerCommand() *cobra.Command {
	cfg := workerCommandConfig()
	var metricsAddr string
	fs := pflag.NewFlagSet("strata worker", pflag.ContinueOnError)
	cfg.registerStores(fs)
	cfg.Temporal.register(fs)
	fs.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:3001", "address serving /metrics and /api/v1/health (empty = none)")
	registerLogFlags(fs, &cfg.LogLevel, &cfg.LogFormat)
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Run the Temporal maintenance worker (merge WAL, index, compact, cleanup).",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log, err := newLogger(cfg.LogLevel, cfg.LogFormat)
			if err != nil {
				return err
			}
			// Like serve, a worker started during a PostgreSQL outage waits for it instead of exiting.
			rt, err := openRuntimeRetrying(ctx, cfg, log, func(error) {})
			if err != nil {
				return err
			}
			defer rt.close(context.Background())
			if metricsAddr != "" {
				stopMetrics, err := serveMetrics(metricsAddr, rt, log)
				if err != nil {
					return err
				}
				defer stopMetrics()
			}
			if err := cfg.tenancy().Validate(); err != nil {
				return fmt.Errorf("--tenant-depth/--tenant-separator: %w", err)
			}
			stop, err := startMaintenanceWorker(cfg.maintenance(), rt.stores, rt.registry, rt.sdkMetrics, log)
			if err != nil {
				return err
			}
			<-ctx.Done()
			stop()
			return nil
		},
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

// serveMetrics serves the worker's /metrics and a health route (for Prometheus and container
// health checks) until the returned function is called.
func serveMetrics(addr string, rt *runtime, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	e := api.New(api.Deps{Log: log, Catalog: rt.catalog, Registry: rt.registry, Version: version})
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	log.Info("worker metrics", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}
