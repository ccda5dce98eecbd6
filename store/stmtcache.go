package store

import (
	"context"
	"database/sql/driver"
	"reflect"

	"modernc.org/sqlite"
)

// stmtCacheSize is how many distinct statements each SQLite connection
// keeps prepared. mull's and River's statements number well under it;
// statements whose text varies with their arguments (IN lists, batch
// inserts) come and go at the least recently used end.
const stmtCacheSize = 256

// stmtCacheConnector opens SQLite connections that keep their statements
// prepared, keyed by their text. database/sql prepares, runs and finalizes
// a statement on every call that is not a *sql.Stmt, and River's queries
// are not: on SQLite, parsing was half of a workflow step's CPU (River's
// completion statement alone, parsed twice a step, was a quarter).
type stmtCacheConnector struct{ driver.Connector }

func newStmtCacheConnector(dsn string) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return stmtCacheConnector{c}, nil
}

func (c stmtCacheConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stmtCacheConn{inner: conn, stmts: map[string]*cachedStmt{}}, nil
}

// sqliteConn is what modernc's connection implements and database/sql uses.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtCacheConn is one connection and its prepared statements.
// database/sql uses a connection from one goroutine at a time, so it needs
// no lock of its own.
type stmtCacheConn struct {
	inner driver.Conn
	stmts map[string]*cachedStmt
	tick  uint64
}

// cachedStmt is a prepared statement; busy while rows read from it are
// open, when the same text runs unprepared instead.
type cachedStmt struct {
	stmt driver.Stmt
	used uint64
	busy bool
}

func (c *stmtCacheConn) conn() sqliteConn { return c.inner.(sqliteConn) }

// get returns the statement for query, preparing and caching it when
// needed, or nil when it is busy or cannot be cached.
func (c *stmtCacheConn) get(ctx context.Context, query string) (*cachedStmt, error) {
	c.tick++
	if s, ok := c.stmts[query]; ok {
		if s.busy {
			return nil, nil
		}
		s.used = c.tick
		return s, nil
	}
	if len(c.stmts) >= stmtCacheSize && !c.evict() {
		return nil, nil
	}
	st, err := c.conn().PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s := &cachedStmt{stmt: st, used: c.tick}
	c.stmts[query] = s
	return s, nil
}

// evict finalizes the least recently used statement that is not busy, and
// says whether there was one.
func (c *stmtCacheConn) evict() bool {
	var oldest string
	var found *cachedStmt
	for q, s := range c.stmts {
		if !s.busy && (found == nil || s.used < found.used) {
			oldest, found = q, s
		}
	}
	if found == nil {
		return false
	}
	delete(c.stmts, oldest)
	_ = found.stmt.Close()
	return true
}

func (c *stmtCacheConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.conn().ExecContext(ctx, query, args)
	}
	return s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *stmtCacheConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.conn().QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: rows, stmt: s}, nil
}

// Close finalizes the cached statements, then closes the connection.
func (c *stmtCacheConn) Close() error {
	for q, s := range c.stmts {
		_ = s.stmt.Close()
		delete(c.stmts, q)
	}
	return c.inner.Close()
}

func (c *stmtCacheConn) Prepare(query string) (driver.Stmt, error) { return c.inner.Prepare(query) }
func (c *stmtCacheConn) Begin() (driver.Tx, error)                 { return c.inner.Begin() } //nolint:staticcheck // driver.Conn requires it
func (c *stmtCacheConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.conn().BeginTx(ctx, opts)
}

func (c *stmtCacheConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.conn().PrepareContext(ctx, query)
}
func (c *stmtCacheConn) Ping(ctx context.Context) error         { return c.conn().Ping(ctx) }
func (c *stmtCacheConn) ResetSession(ctx context.Context) error { return c.conn().ResetSession(ctx) }
func (c *stmtCacheConn) IsValid() bool                          { return c.conn().IsValid() }

// cachedRows frees its statement for the next call when closed.
type cachedRows struct {
	driver.Rows
	stmt *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.stmt.busy = false
	return err
}

// The column type methods of modernc's rows, for rows.ColumnTypes.

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	return r.Rows.(driver.RowsColumnTypeDatabaseTypeName).ColumnTypeDatabaseTypeName(i)
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	return r.Rows.(driver.RowsColumnTypeLength).ColumnTypeLength(i)
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	return r.Rows.(driver.RowsColumnTypeNullable).ColumnTypeNullable(i)
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	return r.Rows.(driver.RowsColumnTypePrecisionScale).ColumnTypePrecisionScale(i)
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	return r.Rows.(driver.RowsColumnTypeScanType).ColumnTypeScanType(i)
}
