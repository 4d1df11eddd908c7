// The Catalog handle: a pgx connection pool over the migrated schema.
package catalog

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Catalog is safe for concurrent use; every method takes a context and honours its deadline.
type Catalog struct {
	pool *pgxpool.Pool
}

// Open connects to the PostgreSQL database at url (a libpq URL or DSN; pool settings such as
// pool_max_conns may be given in it), applies pending migrations and returns the catalog.
func Open(ctx context.Context, url string) (*Catalog, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errorf("catalog: parse database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, errorf("catalog: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, errorf("catalog: connect to %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Catalog{pool: pool}, nil
}

// Ping checks that the database answers.
func (c *Catalog) Ping(ctx context.Context) error { return c.pool.Ping(ctx) }

// Close releases every connection.
func (c *Catalog) Close() { c.pool.Close() }
