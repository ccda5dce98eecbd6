// Package store is mull's access to its database: SQLite (embedded default)
// or PostgreSQL, through database/sql for both so that one *sql.Tx carries a
// domain write and the River jobs it triggers.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/mullhq/mull/config"
)

// Dialects.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// Store holds the database handle and the River driver built on it.
type Store struct {
	// DB is the database/sql handle used by every query, mull's and River's.
	DB *sql.DB
	// Dialect is SQLite or Postgres.
	Dialect string
	// Where says which database this is, with secrets masked, for logs.
	Where string

	pool *pgxpool.Pool
	ckpt *checkpointer // SQLite only
	// reads is SQLite's pool of read-only connections (readDB), nil on
	// Postgres, whose pool serves reads and writes alike.
	reads  *sql.DB
	driver riverdriver.Driver[*sql.Tx]
	now    func() time.Time
}

// Open connects to the database a config names, creating the SQLite file and
// its directory when needed. It does not migrate.
func Open(ctx context.Context, db config.Database) (*Store, error) {
	switch db.Dialect {
	case SQLite:
		return openSQLite(db.Path)
	case Postgres:
		return openPostgres(ctx, db.URL)
	default:
		return nil, fmt.Errorf("store: unknown dialect %q", db.Dialect)
	}
}

func openSQLite(path string) (*Store, error) {
	if path == ":memory:" || strings.Contains(path, "mode=memory") {
		// Each connection would open its own empty database: the read
		// pool and the checkpointer would see no tables.
		return nil, fmt.Errorf("store: sqlite %q: an in-memory database is not supported; give a file path", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create data directory: %w", err)
		}
	}
	// cache_size: 64 MiB of pages rather than SQLite's 2 MiB. A search of
	// a 10,000-memory library reads more than 2 MiB of the FTS index and
	// of the live-memories index, and with the default it read them back
	// from the file (530 read calls a search) on every search.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-65536)" +
		"&_time_format=sqlite&_txlock=immediate"
	connector, err := newStmtCacheConnector(dsn + "&_pragma=wal_autocheckpoint(" + strconv.Itoa(walAutoCheckpoint) + ")")
	if err != nil {
		return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
	}
	db := sql.OpenDB(connector)
	// One connection: SQLite has one writer, and River's producer, elector
	// and notifier get SQLITE_BUSY otherwise. Inside a transaction, touch the
	// database only through that transaction.
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open sqlite %s: %w", path, err)
	}
	reads, err := openSQLiteReads(path)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open sqlite %s: read pool: %w", path, err)
	}
	ckpt, err := startCheckpointer(dsn)
	if err != nil {
		reads.Close()
		db.Close()
		return nil, fmt.Errorf("store: open sqlite %s: checkpointer: %w", path, err)
	}
	abs, _ := filepath.Abs(path)
	return &Store{DB: db, Dialect: SQLite, Where: "sqlite " + abs, driver: riversqlite.New(db), now: time.Now, ckpt: ckpt, reads: reads}, nil
}

// readConns is how many read-only connections SQLite's read pool opens at
// most.
const readConns = 4

// openSQLiteReads opens the pool of read-only connections beside the one
// writer connection. In WAL mode a reader reads the last committed state
// while the writer writes, and blocks neither the writer nor a passive
// checkpoint, so the panel's reports (the overview's 30-day sums, job and
// dead letter counts) run there rather than waiting their turn for the
// writer connection behind River's producer, completer and every job at
// work. query_only refuses any write on them: the writer stays the only
// one. Transactions begin deferred (no _txlock=immediate): a read takes no
// write lock. A read sees every transaction committed before it starts,
// so a caller reads what it has just written.
func openSQLiteReads(path string) (*sql.DB, error) {
	connector, err := newStmtCacheConnector("file:" + path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
		"&_pragma=cache_size(-16384)&_pragma=query_only(1)&_time_format=sqlite")
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(readConns)
	db.SetMaxIdleConns(readConns)
	// An idle reader keeps its page cache a while, then goes.
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// readDB is the handle for reads that need no transaction of the caller's
// and may run beside the writer: SQLite's read pool, or Postgres's pool.
func (s *Store) readDB() *sql.DB {
	if s.reads != nil {
		return s.reads
	}
	return s.DB
}

// ReadsShared is this store with its reads on the writer connection, as
// before SQLite had a read pool: for benchmarks that compare the two. It
// shares s's handles: close s, never it.
func (s *Store) ReadsShared() *Store {
	c := *s
	c.reads = nil
	return &c
}

func openPostgres(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse postgres URL %s: %w", config.MaskURL(url), err)
	}
	if cfg.MaxConns < 20 {
		cfg.MaxConns = 20 // one goes to River's listener for good
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect postgres %s: %w", config.MaskURL(url), err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: connect postgres %s: %w", config.MaskURL(url), err)
	}
	db := stdlib.OpenDBFromPool(pool)
	return &Store{
		DB: db, Dialect: Postgres, Where: "postgres " + config.MaskURL(url),
		pool: pool, driver: riverdatabasesql.NewWithPgxListener(db, pool), now: time.Now,
	}, nil
}

// Driver is the River driver over this store's handle.
func (s *Store) Driver() riverdriver.Driver[*sql.Tx] { return s.driver }

// SetClock replaces the store's clock, for tests.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Now is the store's current time in UTC, truncated to microseconds so that
// both dialects store and return the same value.
func (s *Store) Now() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Close releases the database.
func (s *Store) Close() error {
	var ckptErr error
	if s.reads != nil {
		// Before the checkpointer: its connection, the last, checkpoints
		// the whole log only when no reader is open.
		ckptErr = s.reads.Close()
	}
	if s.ckpt != nil {
		// First: the last connection to close checkpoints the whole log.
		ckptErr = errors.Join(ckptErr, s.ckpt.close())
	}
	err := errors.Join(s.DB.Close(), ckptErr)
	if s.pool != nil {
		s.pool.Close()
	}
	return err
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.DB.PingContext(ctx) }

// InTx runs fn in a transaction, committing when fn returns nil and rolling
// back otherwise (or on panic).
func (s *Store) InTx(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// ReadTx runs fn in a read-only transaction on the read handle whose
// reads all see one snapshot, and rolls it back: for a total read beside
// the rows that explain it, which must not disagree because a write
// committed between the two. On SQLite a deferred transaction keeps the
// snapshot of its first read (WAL); on Postgres it is REPEATABLE READ.
func (s *Store) ReadTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.readTx(ctx, fn)
}

func (s *Store) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	// SQLite's read pool refuses writes itself (query_only) and its driver
	// takes no read-only option or isolation level.
	opts := &sql.TxOptions{}
	if s.Dialect == Postgres {
		opts = &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
	}
	tx, err := s.readDB().BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("store: begin read: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}

// ErrNotFound is returned when a row asked for by id does not exist.
var ErrNotFound = errors.New("not found")
