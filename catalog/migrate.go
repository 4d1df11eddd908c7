// Schema migrations: the SQL files under migrations/ are embedded and applied in order by
// jackc/tern at Open. tern serialises concurrent migrators with a PostgreSQL advisory lock, so
// several Strata processes starting at once against one database are safe.
package catalog

import (
	"context"
	"embed"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// schemaVersionTable records the applied migration version.
const schemaVersionTable = "public.strata_schema_version"

// Migrate brings the database schema up to the newest embedded migration.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return errorf("catalog: acquire connection for migrations: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), schemaVersionTable)
	if err != nil {
		return errorf("catalog: prepare migrations: %w", err)
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return errorf("catalog: load migrations: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return errorf("catalog: apply migrations: %w", err)
	}
	return nil
}
