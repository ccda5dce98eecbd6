package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

// The background checkpointer copies the log the store's writes left into
// the database file, on its own connection, and Close stops it (twice is
// fine, as closing a database is).
func TestCheckpointerCopiesTheLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "mull.db")
	s, err := Open(ctx, config.Database{Dialect: SQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.ExecContext(ctx, "create table ck (v text)"); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, err := s.DB.ExecContext(ctx, "insert into ck values ($1)", "row"); err != nil {
			t.Fatal(err)
		}
	}
	ticked := make(chan checkpointed)
	c, err := startCheckpointerEvery("file:"+path+"?_pragma=busy_timeout(10000)", 5*time.Millisecond, ticked)
	if err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case r := <-ticked:
			if r.err != nil {
				t.Fatalf("checkpoint: %v", r.err)
			}
			done = r.log > 0 && r.copied == r.log
		case <-ctx.Done():
			t.Fatal("the checkpointer never copied the whole log")
		}
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if err := c.close(); err != nil {
		t.Fatalf("a second close: %v", err)
	}
	select {
	case <-c.done:
	default:
		t.Fatal("the checkpointer's goroutine outlived close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Store.Close: %v", err)
	}
}
