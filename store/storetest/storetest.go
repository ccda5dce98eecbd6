// Package storetest gives tests a fresh, migrated store on every database
// mull supports: SQLite in t.TempDir() always, and PostgreSQL when
// MULL_TEST_DATABASE_URL names a server (scripts/test starts a throwaway one).
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx" database/sql driver for admin statements

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
)

// EnvURL names the PostgreSQL server tests create their databases on.
const EnvURL = "MULL_TEST_DATABASE_URL"

// Each runs fn as a subtest once per database: "sqlite", then "postgres".
// The Postgres subtest is skipped, with the reason, when EnvURL is unset.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, dialect := range []string{store.SQLite, store.Postgres} {
		t.Run(dialect, func(t *testing.T) {
			fn(t, New(t, dialect))
		})
	}
}

// New opens a fresh migrated store of one dialect, closed when t ends.
func New(t testing.TB, dialect string) *store.Store {
	t.Helper()
	db := Database(t, dialect)
	ctx := context.Background()
	s, err := store.Open(ctx, db)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx, false); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
	return s
}

// Database returns a config.Database for a new empty database of one
// dialect, dropped (Postgres) or removed (SQLite) when t ends.
func Database(t testing.TB, dialect string) config.Database {
	t.Helper()
	if dialect == store.SQLite {
		return config.Database{Dialect: store.SQLite, Path: filepath.Join(t.TempDir(), "mull.db")}
	}
	admin := os.Getenv(EnvURL)
	if admin == "" {
		t.Skipf("postgres: %s is not set; run scripts/test to start a throwaway PostgreSQL", EnvURL)
	}
	name := "mull_test_" + randomHex(8)
	adb, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	defer adb.Close()
	if _, err := adb.Exec("create database " + name); err != nil {
		t.Fatalf("storetest: create database: %v", err)
	}
	t.Cleanup(func() {
		adb, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer adb.Close()
		_, _ = adb.Exec("drop database if exists " + name + " with (force)")
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("storetest: parse %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return config.Database{Dialect: store.Postgres, URL: u.String()}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("storetest: %v", err))
	}
	return hex.EncodeToString(b)
}

// Analyzed reports whether table was analyzed by hand (ANALYZE, not
// autovacuum) in s's database: pg_stat_user_tables.last_analyze. Postgres
// only.
func Analyzed(tb testing.TB, s *store.Store, table string) bool {
	tb.Helper()
	var at sql.NullTime
	err := s.DB.QueryRowContext(context.Background(),
		`select last_analyze from pg_stat_user_tables where schemaname = current_schema() and relname = $1`, table).Scan(&at)
	if err != nil {
		tb.Fatalf("storetest: last_analyze of %s: %v", table, err)
	}
	return at.Valid
}
