// `strata serve`: the HTTP data API. Opens the catalog (applying migrations), serves until
// SIGINT/SIGTERM, then drains in-flight requests within --shutdown-timeout.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"

	"github.com/strata-store/strata/api"
	"github.com/strata-store/strata/catalog"
	"github.com/strata-store/strata/internal/memlimit"
	"github.com/strata-store/strata/quota"
	"github.com/strata-store/strata/routing"
	"github.com/strata-store/strata/sqlquery/duckrun"
	"github.com/strata-store/strata/storage/budget"
	"github.com/strata-store/strata/storage/cache"
	"github.com/strata-store/strata/storage/deleter"
	"github.com/strata-store/strata/storage/hlc"
	"github.com/strata-store/strata/storage/lsm"
	"github.com/strata-store/strata/storage/objstore"
	"github.com/strata-store/strata/storage/shard"
	"github.com/strata-store/strata/storage/table"
	"github.com/strata-store/strata/storecache"
	"github.com/strata-store/strata/webui"
	"github.com/strata-store/strata/worker"
	"github.com/strata-store/strata/workflows"
)

// serveConfig is every setting of `strata serve`; each field is one flag (and STRATA_* variable).
type serveConfig struct {
	ListenAddr         string
	DatabaseURL        string
	DataURL            string
	StorageLocations   string
	CallerStorageOpts  bool
	AllowedHosts       string
	InstanceID         string
	TenantDepth        int
	AdvertiseURL       string
	RouteFanOut        int
	HeartbeatInterval  time.Duration
	TenantSeparator    string
	QuotaRefresh       time.Duration
	StoreCacheCapacity int
	FlushInterval      time.Duration
	MergeMemoryBytes   int64
	MemtableBytes      int64
	CacheBytes         int64
	GCHeadroomBytes    int64
	APIToken           string
	AdminToken         string
	BodyLimit          string
	BodyIdleTimeout    time.Duration
	MaxInflightBlobs   int64
	MaxInflightRequest int64
	RequestTimeout     time.Duration
	Pprof              bool
	LogLevel           string
	LogFormat          string
	ShutdownTimeout    time.Duration
	MaintenanceWorker  bool
	MergeAfterGens     int
	SQL                duckrun.Limits
	TemporalUIURL      string
	// Pending-generation caps of a shard (lsm.Options): warn, refuse reads, refuse appends.
	PendingWarn, PendingReadMax, PendingAppendMax int
	// FeedRetention bounds how long merged rows are kept for change-feed consumers and read
	// tokens (lsm.Options.RetainFor); FeedPollInterval is how often a long poll looks.
	FeedRetention    time.Duration
	FeedPollInterval time.Duration
	SnapshotMaxTTL   time.Duration
	// readOnlyStores is set by `strata worker` (no flag): a process that never appends opens
	// stores without claiming a write shard, so it cannot fence an API worker sharing its
	// instance id.
	readOnlyStores bool
	Temporal       temporalConfig
}

// DefaultDatabaseURL is the database `make run` starts (scripts/pg.sh defaults).
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5433/strata?sslmode=disable"

func (c *serveConfig) register(fs *pflag.FlagSet) { c.registerWith(fs, false) }

// advertiseURL is --advertise-url, or http://<--listen-addr> (the host name in place of an
// unspecified address).
func advertiseURL(cfg serveConfig) string {
	if cfg.AdvertiseURL != "" {
		return strings.TrimRight(cfg.AdvertiseURL, "/")
	}
	host, port, err := net.SplitHostPort(cfg.ListenAddr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host, _ = os.Hostname()
	}
	return "http://" + net.JoinHostPort(host, port)
}

// maintenance is the maintenance worker's configuration, the sweep's tenancy included.
func (c *serveConfig) maintenance() temporalConfig {
	t := c.Temporal
	t.Sweep.TenantDepth, t.Sweep.TenantSeparator = c.TenantDepth, c.tenancy().Separator
	if c.TenantDepth == 0 {
		t.Sweep.TenantDepth = -1 // the sweep input's "one tenant"
	}
	return t
}

// tenancy is the --tenant-depth/--tenant-separator rule.
func (c *serveConfig) tenancy() catalog.Tenancy {
	return catalog.Tenancy{Depth: c.TenantDepth, Separator: cmp.Or(c.TenantSeparator, ".")}
}

// registerWith registers serve's flags; maintenanceWorker is the default of --maintenance-worker
// (on for `strata dev`).
func (c *serveConfig) registerWith(fs *pflag.FlagSet, maintenanceWorker bool) {
	fs.StringVar(&c.ListenAddr, "listen-addr", "127.0.0.1:3000", "address the HTTP API listens on")
	c.registerStores(fs)
	fs.DurationVar(&c.FlushInterval, "flush-interval", 30*time.Second, "how often the flush sweeper seals resident stores (0 disables)")
	fs.StringVar(&c.APIToken, "api-token", "", "bearer token required by the data API (empty = no auth)")
	fs.StringVar(&c.AdminToken, "admin-token", "", "bearer token required by the admin API (empty = no auth)")
	fs.StringVar(&c.AllowedHosts, "allowed-hosts", "", "host names (or addresses) the API answers under, comma-separated, e.g. strata.internal,127.0.0.1; requests with another Host header get 403 (a defence against DNS rebinding; empty = any)")
	fs.BoolVar(&c.CallerStorageOpts, "caller-storage-options", false, "let requests with the API token create stores with storage_options (a location and a prefix); by default that takes the admin token")
	fs.StringVar(&c.BodyLimit, "body-limit", "1G", "largest request body")
	fs.DurationVar(&c.BodyIdleTimeout, "body-idle-timeout", 120*time.Second, "answer 408 when a request body stalls this long")
	fs.Int64Var(&c.MaxInflightBlobs, "max-inflight-blob-bytes", 0, "blob bytes uploaded or downloaded at once before 503 (0 = unlimited)")
	fs.Int64Var(&c.MaxInflightRequest, "max-inflight-request-bytes", 2<<30, "memory for request bodies being read and decoded at once (twice each body) before 503 (0 = unlimited)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", 120*time.Second, "deadline of every request, body upload included: past it the client gets 503 (0 = none)")
	fs.Int64Var(&c.SQL.MemoryBytes, "sql-memory-bytes", 512<<20, "memory one SQL query (POST …/query) may use in DuckDB; past it the query spills to --sql-spill-dir")
	fs.IntVar(&c.SQL.Threads, "sql-threads", 2, "DuckDB threads of one SQL query")
	fs.DurationVar(&c.SQL.Timeout, "sql-timeout", time.Minute, "longest an SQL query runs, its snapshot included (past it: 408)")
	fs.IntVar(&c.SQL.MaxConcurrent, "sql-max-queries", 2, "SQL queries running at once in this process; more get 503 with Retry-After")
	fs.StringVar(&c.SQL.SpillDir, "sql-spill-dir", "", "where SQL queries spill what exceeds their memory, a directory of its own per query (default: $TMPDIR/strata-sql-<uid>)")
	fs.Int64Var(&c.SQL.SpillBytes, "sql-spill-bytes", 8<<30, "the most one SQL query may spill to disk")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve runtime profiles under /api/v1/admin/debug/pprof/ (behind the admin token)")
	registerLogFlags(fs, &c.LogLevel, &c.LogFormat)
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long shutdown waits for in-flight requests")
	temporalUI := ""
	if maintenanceWorker {
		temporalUI = "http://127.0.0.1:8233" // strata dev: the Temporal dev server's UI
	}
	fs.StringVar(&c.TemporalUIURL, "temporal-ui-url", temporalUI, "the Temporal Web UI, linked from the Strata UI's stores to their maintenance workflows (empty: no links)")
	fs.BoolVar(&c.MaintenanceWorker, "maintenance-worker", maintenanceWorker, "also run the Temporal maintenance worker in this process")
	fs.DurationVar(&c.FeedPollInterval, "feed-poll-interval", 250*time.Millisecond, "how often a long-polling change-feed read (GET …/changes?wait=) looks for sealed rows when no seal notification (PostgreSQL NOTIFY from the worker that sealed) wakes it first")
	fs.StringVar(&c.AdvertiseURL, "advertise-url", "", "the URL clients reach this worker at, for routing (GET …/{name}/route and the Strata-Preferred-Workers header send a store's appends to its preferred workers); default http://<--listen-addr>, with the host name when it listens on every address")
	fs.DurationVar(&c.HeartbeatInterval, "heartbeat-interval", routing.DefaultInterval, "how often this worker records itself in the catalog's live set (a worker not seen for three intervals is taken for gone)")
	fs.IntVar(&c.RouteFanOut, "route-fanout", routing.DefaultFanOut, "preferred workers per store: a store's appends are routed to this many of the live workers (rendezvous hashing), so it keeps about this many write shards")
	fs.DurationVar(&c.QuotaRefresh, "quota-refresh", quota.DefaultRefresh, "how often a worker re-reads tenant quotas and usage from the catalog and shares its admitted append rates with the other workers")
	fs.DurationVar(&c.SnapshotMaxTTL, "snapshot-max-ttl", 7*24*time.Hour, "the longest a read token (POST /api/v1/snapshots) may live: until it expires, the stores it names keep its table versions and the merged rows it reads")
	fs.IntVar(&c.MergeAfterGens, "merge-after-generations", 8, "ask for a WAL merge (through Temporal) as soon as a seal leaves this worker's shard of a store with this many generations pending (0 = leave it to the sweep)")
	c.Temporal.register(fs)
}

// registerStores registers the flags that locate and open stores (shared with `strata worker`).
func (c *serveConfig) registerStores(fs *pflag.FlagSet) {
	fs.StringVar(&c.DatabaseURL, "database-url", DefaultDatabaseURL, "PostgreSQL URL of the catalog")
	fs.StringVar(&c.DataURL, "data-url", "file://.data/stores", "where store data lives: file://<dir> or a directory path")
	fs.StringVar(&c.StorageLocations, "storage-locations", "", "further places stores may live, as name=url pairs separated by commas (name=s3://bucket/prefix?endpoint=..&region=..&profile=..): a store created with storage_options {\"location\": \"<name>\"} lives there; callers can never name a host, bucket or credential")
	fs.StringVar(&c.InstanceID, "instance-id", "", "this worker's identity; its write shard in every store derives from it (default: hostname)")
	fs.IntVar(&c.StoreCacheCapacity, "store-cache-capacity", 2000, "open stores kept resident")
	fs.IntVar(&c.TenantDepth, "tenant-depth", 1, "a store's tenant is the first this many segments of its name (split at --tenant-separator): quotas, fair shares of maintenance and `strata status --by-tenant` group stores by it (0: one tenant for all)")
	fs.StringVar(&c.TenantSeparator, "tenant-separator", ".", "the character splitting store names into tenant segments: . - or _")
	fs.Int64Var(&c.MergeMemoryBytes, "merge-memory-bytes", 3<<30, "process-wide WAL merge memory budget in bytes (0 = unlimited)")
	fs.Int64Var(&c.CacheBytes, "cache-memory-bytes", 0, "process-wide bound on decoded immutable objects kept in memory (manifests, Parquet footers, deletion vectors, key-index footers, generation key files) across every store (0 = an eighth of GOMEMLIMIT when set, else 256 MiB)")
	fs.IntVar(&c.PendingWarn, "pending-warn-generations", 256, "warn (naming the store) when a shard has this many sealed generations waiting to be merged: every read consults each of them")
	fs.IntVar(&c.PendingReadMax, "pending-read-max-generations", 4096, "refuse reads of a store with 503 while a shard has this many pending generations")
	fs.IntVar(&c.PendingAppendMax, "pending-append-max-generations", 2048, "refuse appends with 503 while this worker's shard of the store has this many pending generations (maintenance is behind)")
	fs.DurationVar(&c.FeedRetention, "feed-retention", 24*time.Hour, "how long merged rows stay readable through the change feed for registered consumers that have not committed past them, and for read tokens (a consumer further behind gets 410 CURSOR_EXPIRED; storage grows by the rows merged in this window while a consumer lags)")
	fs.Int64Var(&c.MemtableBytes, "memtable-memory-bytes", 0, "process-wide bound on unsealed rows in memory, past which the largest memtables are sealed and appends wait (0 = a quarter of GOMEMLIMIT when set, else 1 GiB; negative = unlimited)")
	fs.Int64Var(&c.GCHeadroomBytes, "gc-headroom-bytes", 64<<20, "keep the Go soft memory limit at the bytes the memory budgets hold (write buffer, cache, merge and request memory) plus this much, at least 1.15x the live heap and at most GOMEMLIMIT, so RSS follows the budgets (0 = the Go runtime's defaults)")
}

func registerLogFlags(fs *pflag.FlagSet, level, format *string) {
	fs.StringVar(level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(format, "log-format", "text", "log format: text or json")
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

func serveCommand() *cobra.Command {
	var cfg serveConfig
	fs := pflag.NewFlagSet("strata serve", pflag.ContinueOnError)
	cfg.register(fs)
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run the HTTP data API.",
		RunE:  func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), cfg) },
	}
	cmd.Flags().AddFlagSet(fs)
	return cmd
}

func serve(ctx context.Context, cfg serveConfig) error {
	log, err := newLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	slog.SetDefault(log)

	if _, err := objstore.ParseURL(cfg.DataURL); err != nil {
		return fmt.Errorf("--data-url: %w", err)
	}
	if _, err := storecache.ParseLocations(cfg.StorageLocations); err != nil {
		return fmt.Errorf("--storage-locations: %w", err)
	}
	if err := cfg.tenancy().Validate(); err != nil {
		return fmt.Errorf("--tenant-depth/--tenant-separator: %w", err)
	}
	if u, err := url.Parse(cfg.AdvertiseURL); cfg.AdvertiseURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("--advertise-url %q: want http(s)://host[:port]", cfg.AdvertiseURL)
	}
	// Listen first: a busy port fails at once, and while the catalog cannot be opened (PostgreSQL
	// down at start) health answers "degraded" and every route 503, instead of the worker exiting
	// and being unable to come back until PostgreSQL does.
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.ListenAddr, err)
	}
	var handler atomic.Pointer[http.Handler]
	starting := api.Starting(version) // the reason a start waits is logged, never served
	handler.Store(&starting)
	srv := newHTTPServer(cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	defer srv.Close()

	rt, err := openRuntimeRetrying(ctx, cfg, log, func(error) {})
	if err != nil {
		return err
	}
	defer rt.close(context.Background())
	cat, mgr, reg := rt.catalog, rt.stores, rt.registry
	if cfg.MaintenanceWorker {
		stop, err := startMaintenanceWorker(cfg.maintenance(), mgr, reg, rt.sdkMetrics, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	sweepCtx, stopSweeper := context.WithCancel(context.Background())
	defer stopSweeper()
	sweeperDone := make(chan struct{})
	go func() {
		defer close(sweeperDone)
		mgr.RunFlushSweeper(sweepCtx, cfg.FlushInterval, storecache.NewSweeperMetrics(reg))
	}()
	sealWatchDone := make(chan struct{})
	go func() { // change-feed wake-ups between workers; stopped with the sweeper, waited for below
		defer close(sealWatchDone)
		mgr.RunSealWatch(sweepCtx)
	}()
	instance := cmp.Or(cfg.InstanceID, lsm.DefaultInstance())
	membership := routing.New(cat, routing.Options{Self: routing.Member{Instance: instance, URL: advertiseURL(cfg)},
		FanOut: cfg.RouteFanOut, Interval: cfg.HeartbeatInterval, Log: log})
	membershipDone := make(chan struct{})
	go func() { // heartbeats this worker into the live set; stopped with the sweeper, waited for below
		defer close(membershipDone)
		membership.Run(sweepCtx)
	}()
	defer func() { stopSweeper(); <-sealWatchDone; <-membershipDone }() // on every return: cancel, then wait
	tc := rt.temporal
	sqlRunner, err := duckrun.New(cfg.SQL, log)
	if err != nil {
		return err
	}
	e := api.New(api.Deps{Log: log, Catalog: cat, Stores: mgr, Registry: reg, Version: version, SQL: sqlRunner,
		APIToken: cfg.APIToken, AdminToken: cfg.AdminToken, CallerStorageOptions: cfg.CallerStorageOpts, AllowedHosts: strings.FieldsFunc(cfg.AllowedHosts, func(r rune) bool { return r == ',' || r == ' ' }), BodyLimit: cfg.BodyLimit, BodyIdleTimeout: cfg.BodyIdleTimeout,
		MaxInflightBlobBytes: cfg.MaxInflightBlobs, MaxInflightRequestBytes: cfg.MaxInflightRequest, Pprof: cfg.Pprof,
		Memory: rt.memory,
		Temporal: api.PingFunc(func(ctx context.Context) error {
			_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}),
		Maintenance: worker.Maintainer{Client: tc}, Leases: worker.Leases{Client: tc}, FeedPollInterval: cfg.FeedPollInterval,
		MaxSnapshotTTL: cfg.SnapshotMaxTTL,
		Routing:        membership,
		Quotas: quota.New(cat, quota.Options{Tenancy: cfg.tenancy(), Instance: instance,
			Refresh: cfg.QuotaRefresh, Log: log, Registerer: reg})})
	if err := webui.Register(e, webui.Options{API: e, APIToken: cfg.APIToken, AdminToken: cfg.AdminToken,
		TemporalUIURL: cfg.TemporalUIURL, TemporalNamespace: cfg.Temporal.Namespace, Log: log}); err != nil {
		return err
	}
	full := api.WithDeadline(e, cfg.RequestTimeout)
	handler.Store(&full)
	log.Info("strata serving", "addr", ln.Addr().String(), "version", version)

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
	shutCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	stopSweeper()
	<-sweeperDone
	return nil
}

// newHTTPServer is the API's http.Server with its connection timeouts.
func newHTTPServer(cfg serveConfig, h http.Handler) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout: a body may take as long as the request deadline allows, and a stalled
		// one is cut by --body-idle-timeout (a deadline renewed before every read of it).
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
	}
	if cfg.RequestTimeout > 0 {
		// Responses are written within the request deadline (WithDeadline answers 503 then) plus
		// time to send them: a client that stops reading cannot pin the connection.
		srv.WriteTimeout = cfg.RequestTimeout + 30*time.Second
	}
	return srv
}

// openRuntimeRetrying is openRuntime, retried with capped exponential backoff while the catalog
// is unreachable (each failure goes to onRetry); any other error, or ctx ending, returns.
func openRuntimeRetrying(ctx context.Context, cfg serveConfig, log *slog.Logger, onRetry func(error)) (*runtime, error) {
	wait := 500 * time.Millisecond
	for {
		rt, err := openRuntime(ctx, cfg, log)
		if err == nil || !catalog.IsUnavailable(err) {
			return rt, err
		}
		onRetry(err)
		log.Warn("the catalog is unreachable; retrying", "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// runtime is what both `serve` and `worker` open: the catalog, the metrics registry and the
// store manager with the process-wide clock and merge budget.
type runtime struct {
	temporal client.Client // lazy: serving never waits for Temporal; nil for `strata worker`
	// sdkMetrics exports the Temporal SDK's metrics of every client of the process (the lazy
	// one and the maintenance worker's) on registry.
	sdkMetrics  *worker.SDKMetrics
	catalog     *catalog.Catalog
	registry    *prometheus.Registry
	stores      *storecache.Manager
	writeBuffer *shard.WriteBuffer // closed after the stores
	deleter     *deleter.Deleter   // every delete of every store; closed after the stores
	memory      *memlimit.Governor // the soft memory limit; stopped last
	log         *slog.Logger
}

func openRuntime(ctx context.Context, cfg serveConfig, log *slog.Logger) (*runtime, error) {
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cat, err := catalog.Open(openCtx, cfg.DatabaseURL)
	cancel()
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo())
	// The budgets are sized (from GOMEMLIMIT when set) before the governor moves the limit.
	writeBuffer := shard.NewWriteBuffer(memtableLimit(cfg.MemtableBytes), 0, reg)
	objectCache := cache.New(cacheLimit(cfg.CacheBytes), reg)
	mergeBudget := budget.New(cfg.MergeMemoryBytes, reg)
	objectDeleter := deleter.New(deleter.Options{Metrics: deleter.NewMetrics(reg)})
	sdkMetrics := worker.NewSDKMetrics(reg)
	var tc client.Client
	var requestMerge storecache.MergeRequester
	if !cfg.readOnlyStores {
		// The admin maintenance route and merges-after-seals talk to Temporal through a lazy
		// client: serving data never waits for (or fails because of) Temporal.
		if tc, err = client.NewLazyClient(client.Options{HostPort: cfg.Temporal.Address, Namespace: cfg.Temporal.Namespace, Logger: log,
			MetricsHandler: sdkMetrics}); err != nil {
			writeBuffer.Close()
			cat.Close()
			return nil, fmt.Errorf("temporal client: %w", err)
		}
		if cfg.MergeAfterGens > 0 {
			requestMerge = func(ctx context.Context, kind catalog.Kind, name string) error {
				_, err := worker.RequestMaintenance(ctx, tc, workflows.StoreRef{Kind: kind, Name: name}, workflows.Request{Op: workflows.OpMergeWAL})
				return err
			}
		}
	}
	locations, err := storecache.ParseLocations(cfg.StorageLocations)
	if err != nil {
		return nil, fmt.Errorf("--storage-locations: %w", err)
	}
	mgr, err := storecache.New(cat, storecache.Config{
		DataURL:      cfg.DataURL,
		Locations:    locations,
		Capacity:     cfg.StoreCacheCapacity,
		WrapObjects:  objectsWrapper(),
		RequestMerge: requestMerge, MergeAfterGenerations: cfg.MergeAfterGens,
		Store: lsm.Options{
			Instance:            cfg.InstanceID,
			ReadOnly:            cfg.readOnlyStores,
			ReadWarnGenerations: cfg.PendingWarn, ReadMaxGenerations: cfg.PendingReadMax,
			AppendMaxGenerations: cfg.PendingAppendMax,
			RetainFor:            cfg.FeedRetention,
			Clock:                hlc.New(nil),
			Budget:               mergeBudget,
			WriteBuffer:          writeBuffer,
			Metrics:              lsm.NewMetrics(reg),
			Table:                table.Options{Metrics: table.NewMetrics(reg), Cache: objectCache, Deleter: objectDeleter},
		},
	}, reg, log)
	if err != nil {
		if tc != nil {
			tc.Close()
		}
		writeBuffer.Close()
		cat.Close()
		return nil, err
	}
	// Stores registered before storage locations existed, under a bucket or endpoint of their own,
	// are named once at start (the migration step: configure a location that contains them).
	reportCtx, cancelReport := context.WithTimeout(ctx, 10*time.Second)
	if _, err := mgr.ReportStoresOutsideLocations(reportCtx); err != nil {
		log.Warn("listing stores outside the storage locations failed", "err", err)
	}
	cancelReport()
	memory := memlimit.Start(memlimit.Config{Headroom: cfg.GCHeadroomBytes}, reg)
	memory.Track(writeBuffer.Used)
	memory.Track(objectCache.Bytes)
	memory.Track(mergeBudget.Reserved)
	return &runtime{temporal: tc, sdkMetrics: sdkMetrics, catalog: cat, registry: reg, stores: mgr, writeBuffer: writeBuffer,
		deleter: objectDeleter, memory: memory, log: log}, nil
}

// memtableLimit resolves --memtable-memory-bytes: 0 picks a quarter of the Go memory limit
// (GOMEMLIMIT) when one is set, else 1 GiB; a negative value means unlimited.
func memtableLimit(flag int64) int64 {
	switch {
	case flag < 0:
		return 0
	case flag > 0:
		return flag
	}
	return fractionOfMemoryLimit(4, 1<<30)
}

// cacheLimit resolves --cache-memory-bytes: 0 picks an eighth of GOMEMLIMIT when one is set,
// else 256 MiB; at least 1 MiB.
func cacheLimit(flag int64) int64 {
	if flag > 0 {
		return max(flag, 1<<20)
	}
	return max(fractionOfMemoryLimit(8, 256<<20), 1<<20)
}

// fractionOfMemoryLimit is the Go memory limit (GOMEMLIMIT) divided by d, or dflt when none is set.
func fractionOfMemoryLimit(d, dflt int64) int64 {
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
		return lim / d
	}
	return dflt
}

// close seals every resident store (nothing acknowledged waits for a replay) and disconnects.
func (r *runtime) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.stores.Close(ctx); err != nil {
		r.log.Error("sealing resident stores at shutdown", "err", err)
	}
	r.writeBuffer.Close()
	r.deleter.Close() // after the stores: their last seals and merges hand it garbage
	r.catalog.Close()
	r.memory.Stop()
	if r.temporal != nil {
		r.temporal.Close() // after the stores: their last seals may still ask for merges
	}
}

// buildInfo is strata_build_info: always 1, labelled with the build's version and Go version
// (dashboards join it to tell which release a process runs).
func buildInfo() prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_build_info",
		Help: "Always 1; labels name the running build (version, Go version)."}, []string{"version", "goversion"})
	g.WithLabelValues(version, goruntime.Version()).Set(1)
	return g
}
