package store

import (
	"database/sql"
	"time"

	"modernc.org/sqlite"
)

// checkpointEvery is how often the checkpointer copies a SQLite database's
// write-ahead log back into the database file.
const checkpointEvery = time.Second

// walAutoCheckpoint is the log's size, in pages, at which a commit on
// mull's connection still checkpoints by itself: only if the checkpointer
// falls far behind or fails, so the log stays bounded.
const walAutoCheckpoint = 10000

// checkpointer copies a SQLite database's write-ahead log into the
// database file in the background, on a connection of its own. SQLite's
// own checkpoint runs inside the commit that takes the log past 1,000
// pages (4 MiB), and copies them and syncs the file before that commit
// returns: a memory search bumps its hits' uses, about 10 pages, so every
// 100th search paid 10 to 40 ms for it, which was the searches' p99. A
// passive checkpoint on another connection waits for no reader or writer
// and blocks none; mull's connection checkpoints only past
// walAutoCheckpoint pages.
type checkpointer struct {
	db   *sql.DB
	stop chan struct{}
	done chan struct{}
}

// startCheckpointer opens the checkpointer's connection to the database
// dsn names and starts it.
func startCheckpointer(dsn string) (*checkpointer, error) {
	connector, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	c := &checkpointer{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			// A checkpoint that fails (another one running) leaves the
			// log to the next tick, and to walAutoCheckpoint.
			_, _ = c.db.Exec("pragma wal_checkpoint(passive)")
		}
	}
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
