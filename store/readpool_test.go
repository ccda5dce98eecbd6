package store_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// The panel's reports read beside the writer: while a write transaction
// holds SQLite's one writer connection, they answer (before the read pool
// they waited for it), and they see what was committed just before.
// SQLite's read connections refuse to write.
func TestReadsBesideTheWriter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		now := time.Now().UTC()
		if err := s.Heartbeat(ctx, store.Worker{ClientID: "w1", Host: "h", PID: 1, StartedAt: now, HeartbeatAt: now}); err != nil {
			t.Fatal(err)
		}
		err := s.InTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `insert into mull_workers (client_id, host, pid, started_at, heartbeat_at, queues)
				values ('w2', 'h', 2, $1, $1, '')`, now); err != nil {
				return err
			}
			ws, err := s.ListWorkers(ctx)
			if err != nil {
				return err
			}
			// The committed worker, not the one this transaction has
			// not committed yet.
			if len(ws) != 1 || ws[0].ClientID != "w1" {
				t.Errorf("workers read beside the writer: %+v", ws)
			}
			if _, err := s.JobCounts(ctx); err != nil {
				return err
			}
			if _, err := s.DeadLetterCounts(ctx); err != nil {
				return err
			}
			if _, _, err := s.BudgetDay(ctx, "2026-12-01"); err != nil {
				return err
			}
			_, err = s.CountAgentUsages(ctx, store.OverheadFilter{Since: now.AddDate(0, 0, -30)})
			return err
		})
		if err != nil {
			t.Fatalf("reads inside a write transaction: %v", err)
		}
		if ws, err := s.ListWorkers(ctx); err != nil || len(ws) != 2 {
			t.Fatalf("workers after the commit: %+v, %v", ws, err)
		}
		if s.Dialect == store.SQLite {
			// Every connection of the pool, held at once so each is its
			// own, refuses the write: query_only is set per connection.
			conns := make([]*sql.Conn, store.ReadConns)
			for i := range conns {
				c, err := s.ReadDB().Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns[i] = c
			}
			for i, c := range conns {
				_, err := c.ExecContext(ctx, `delete from mull_workers`)
				if err == nil || !strings.Contains(err.Error(), "readonly") {
					t.Fatalf("a write on the read pool's connection %d: %v", i, err)
				}
			}
			for _, c := range conns {
				c.Close()
			}
			if ws, _ := s.ListWorkers(ctx); len(ws) != 2 {
				t.Fatalf("the read pool wrote: %+v", ws)
			}
		}
	})
}

// An in-memory SQLite database is refused, naming it: each of the store's
// connections (the writer, the read pool, the checkpointer) would open its
// own empty one.
func TestOpenRefusesInMemorySQLite(t *testing.T) {
	for _, path := range []string{":memory:", "file:x?mode=memory&cache=shared"} {
		s, err := store.Open(context.Background(), config.Database{Dialect: store.SQLite, Path: path})
		if err == nil {
			s.Close()
			t.Fatalf("open %q: no error", path)
		}
		if !strings.Contains(err.Error(), "in-memory") || !strings.Contains(err.Error(), path) {
			t.Fatalf("open %q: %v, want it named and called in-memory", path, err)
		}
	}
}
