package store

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
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
	db    *sql.DB
	every time.Duration
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	err   error
	// ticked, when set (tests), hears of each checkpoint tried.
	ticked chan<- checkpointed
}

// startCheckpointer opens the checkpointer's connection to the database
// dsn names and starts it. Its connection only checkpoints, so it keeps
// SQLite's small default page cache whatever dsn asks.
func startCheckpointer(dsn string) (*checkpointer, error) {
	return startCheckpointerEvery(dsn+"&_pragma=cache_size(-2000)", checkpointEvery, nil)
}

func startCheckpointerEvery(dsn string, every time.Duration, ticked chan<- checkpointed) (*checkpointer, error) {
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
	c := &checkpointer{db: db, every: every, stop: make(chan struct{}), done: make(chan struct{}), ticked: ticked}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	tick := time.NewTicker(c.every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			// A busy checkpoint (another one running) leaves the log to
			// the next tick; one that fails otherwise (disk full, an I/O
			// error) is said once, and once more when it clears: until
			// then the log grows to walAutoCheckpoint pages.
			var busy int
			var res checkpointed
			err := c.db.QueryRowContext(ctx, "pragma wal_checkpoint(passive)").Scan(&busy, &res.log, &res.copied)
			res.err = err
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && !failing:
				failing = true
				slog.Default().Warn("sqlite: the background checkpoint failed; the write-ahead log grows until a commit checkpoints it",
					"component", "store", "error", err)
			case err == nil && failing:
				failing = false
				slog.Default().Info("sqlite: the background checkpoint works again", "component", "store")
			}
			if c.ticked != nil {
				select {
				case c.ticked <- res:
				case <-c.stop:
					return
				}
			}
		}
	}
}

// checkpointed is what one background checkpoint did: the log's frames
// and how many of them are in the database file now.
type checkpointed struct {
	log, copied int
	err         error
}

// close stops the checkpointer and closes its connection; a second call
// returns the first one's result.
func (c *checkpointer) close() error {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		c.err = c.db.Close()
	})
	return c.err
}
