package ingest

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mullhq/mull/learn/history"
)

// idlePage is how many idle candidates EndIdle reads at a time.
const idlePage = 100

// EndIdle marks idle every open session whose last event is older than
// idle, and runs SessionEnded for each in the transaction that marks it:
// one transaction per session, so one failing hook leaves the others done
// (the error is returned and the session_idle job retries). It returns how
// many sessions it ended. A batch that brings the session a newer event
// first wins: the session stays open.
//
// A session that is history (history.Live: only imported, or its last
// event older than Hooks.MaxSessionAge) is marked idle with the end reason
// "historical" and runs no hook: nothing learns from it unasked.
func (s *Service) EndIdle(ctx context.Context, idle time.Duration) (int, error) {
	if idle <= 0 {
		return 0, fmt.Errorf("ingest: idle timeout must be positive, got %s", idle)
	}
	cutoff := s.store.Now().Add(-idle)
	ended := 0
	for {
		ids, err := s.store.OpenSessionsBefore(ctx, cutoff, idlePage)
		if err != nil {
			return ended, err
		}
		n := 0
		for _, id := range ids {
			err := s.store.InTx(ctx, func(tx *sql.Tx) error {
				sess, ok, err := s.store.IdleSession(ctx, tx, id, cutoff)
				if err != nil || !ok {
					return err
				}
				n++
				pushed, err := s.store.SessionPushed(ctx, tx, id)
				if err != nil {
					return err
				}
				if live, _ := history.Live(history.Facts{Pushed: pushed, LastEventAt: sess.LastEventAt,
					Now: s.store.Now(), MaxAge: s.hooks.MaxSessionAge}); !live {
					sess.EndReason = history.Reason
					return s.store.SaveSession(ctx, tx, &sess)
				}
				return s.sessionEnded(ctx, tx, sess)
			})
			if err != nil {
				return ended, err
			}
		}
		ended += n
		// A short page was the last; a page where nothing changed would
		// come back the same.
		if len(ids) < idlePage || n == 0 {
			return ended, nil
		}
	}
}
