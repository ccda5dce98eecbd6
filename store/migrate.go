package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/mullhq/mull/migrations"
)

// MigrationStep is one migration applied (or, in a dry run, to be applied).
type MigrationStep struct {
	// Line is "river" or "mull".
	Line     string
	Version  int
	Name     string
	Duration time.Duration
}

const createMigrationsTable = `create table if not exists mull_migrations (
	version integer primary key,
	name text not null,
	applied_at text not null)`

// migrateLockKey is the Postgres advisory lock that serializes migrations
// between processes starting at once.
const migrateLockKey = 0x6d756c6c // "mull"

// Migrate applies River's migrations and then mull's, all in one transaction,
// and reports what it applied. With dryRun it reports what it would apply and
// changes nothing.
func (s *Store) Migrate(ctx context.Context, dryRun bool) ([]MigrationStep, error) {
	mine, err := migrations.For(s.Dialect)
	if err != nil {
		return nil, err
	}
	migrator, err := rivermigrate.New(s.driver, nil)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var steps []MigrationStep
	var res *rivermigrate.MigrateResult
	opts := &rivermigrate.MigrateOpts{DryRun: dryRun}
	if s.Dialect == Postgres {
		// River's migrations must each commit on their own (one adds an enum
		// value that a later one uses), so on Postgres a session advisory
		// lock, not one transaction, keeps two processes from migrating at once.
		conn, err := s.DB.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "select pg_advisory_lock($1)", migrateLockKey); err != nil {
			return nil, fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "select pg_advisory_unlock($1)", migrateLockKey)
		if res, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, opts); err != nil {
			return nil, fmt.Errorf("migrate river: %w", err)
		}
	}
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback()
	if s.Dialect == SQLite {
		// One connection and an immediate transaction: SQLite serializes.
		if res, err = migrator.MigrateTx(ctx, tx, rivermigrate.DirectionUp, opts); err != nil {
			return nil, fmt.Errorf("migrate river: %w", err)
		}
	}
	for _, v := range res.Versions {
		steps = append(steps, MigrationStep{Line: "river", Version: v.Version, Name: v.Name, Duration: v.Duration})
	}
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return nil, err
	}
	for _, m := range mine {
		if applied[m.Version] {
			continue
		}
		start := time.Now()
		if !dryRun {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return nil, fmt.Errorf("migrate mull %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, "insert into mull_migrations (version, name, applied_at) values ($1, $2, $3)",
				m.Version, m.Name, s.Now().Format(time.RFC3339Nano)); err != nil {
				return nil, fmt.Errorf("migrate mull %03d_%s: %w", m.Version, m.Name, err)
			}
		}
		steps = append(steps, MigrationStep{Line: "mull", Version: m.Version, Name: m.Name, Duration: time.Since(start)})
	}
	if dryRun {
		return steps, nil
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("migrate: commit: %w", err)
	}
	return steps, nil
}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, "select version from mull_migrations")
	if err != nil {
		return nil, fmt.Errorf("migrate: read applied versions: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}

// MigrationsPending reports how many migrations, River's and mull's, are not
// yet applied. Health checks use it.
func (s *Store) MigrationsPending(ctx context.Context) (int, error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback() // read only: even the table created below is undone
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return 0, err
	}
	steps, err := s.dryRunTx(ctx, tx)
	return len(steps), err
}

func (s *Store) dryRunTx(ctx context.Context, tx *sql.Tx) ([]MigrationStep, error) {
	migrator, err := rivermigrate.New(s.driver, nil)
	if err != nil {
		return nil, err
	}
	res, err := migrator.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{DryRun: true})
	if err != nil {
		return nil, err
	}
	var steps []MigrationStep
	for _, v := range res.Versions {
		steps = append(steps, MigrationStep{Line: "river", Version: v.Version, Name: v.Name})
	}
	mine, err := migrations.For(s.Dialect)
	if err != nil {
		return nil, err
	}
	var have int
	if err := tx.QueryRowContext(ctx, "select count(*) from mull_migrations").Scan(&have); err != nil {
		return nil, fmt.Errorf("read applied versions: %w", err)
	}
	for _, m := range mine[min(have, len(mine)):] {
		steps = append(steps, MigrationStep{Line: "mull", Version: m.Version, Name: m.Name})
	}
	return steps, nil
}
