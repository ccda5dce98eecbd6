package benches

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/learn/bench"
	"github.com/mullhq/mull/learn/harness"
	"github.com/mullhq/mull/store"
)

// captureTries bounds how often Capture reads again when a refinement
// committed while it read.
const captureTries = 5

// scopeKeys are the stores a harness snapshot of session covers: the
// global one, and the session's local one.
func scopeKeys(session string) []string {
	keys := []string{harness.Global.Key()}
	if session != "" {
		keys = append(keys, harness.Local(session).Key())
	}
	return keys
}

// history lists the ids of the refinements committed to the stores of
// session, in commit order.
func (s *Service) history(ctx context.Context, session string) ([]string, error) {
	commits, err := s.store.HarnessCommits(ctx, s.store.DB, scopeKeys(session))
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(commits))
	for i, c := range commits {
		ids[i] = c.ID
	}
	return ids, nil
}

// mergedWithHistory reads the session's merged entries and the history
// that made them, consistently: the history is read before and after the
// entries, and the read is repeated when a refinement committed between
// (a refinement commits its entries and its record together), so the
// entries are exactly those the history made.
func (s *Service) mergedWithHistory(ctx context.Context, session string) (harness.State, []string, error) {
	before, err := s.history(ctx, session)
	if err != nil {
		return nil, nil, err
	}
	for range captureTries {
		entries, err := s.harness.Merged(ctx, session)
		if err != nil {
			return nil, nil, err
		}
		after, err := s.history(ctx, session)
		if err != nil {
			return nil, nil, err
		}
		if slices.Equal(before, after) {
			return entries, after, nil
		}
		before = after
	}
	return nil, nil, fmt.Errorf("capture: the harness kept changing while it was read (%d tries); capture again", captureTries)
}

func (s *Service) capture(ctx context.Context, r CaptureRequest) (bench.Snapshot, error) {
	if s.harness == nil {
		return bench.Snapshot{}, errors.New("benches: no harness service to capture from")
	}
	if r.ID == "" {
		r.ID = newID("snap_")
	} else if problem := checkID(r.ID); problem != "" {
		return bench.Snapshot{}, &FieldError{Field: "snapshot_id", Problem: problem}
	}
	if err := checkOptionalName("session", r.Session, events.MaxIDLen); err != nil {
		return bench.Snapshot{}, err
	}
	entries, history, err := s.mergedWithHistory(ctx, r.Session)
	if err != nil {
		return bench.Snapshot{}, err
	}
	sn := bench.Snapshot{ID: r.ID, Kind: bench.HarnessSnapshot, Session: r.Session, Entries: entries, History: history,
		CapturedAt: s.store.Now()}
	sn.StateHash = bench.StateHash(sn)
	err = s.store.InsertBenchSnapshot(ctx, s.store.DB, sn)
	if errors.Is(err, store.ErrBenchSnapshotExists) {
		return bench.Snapshot{}, conflict("capture-reference:duplicate-id", "benchmark snapshot id already exists: %s", r.ID)
	}
	if err != nil {
		return bench.Snapshot{}, err
	}
	s.logger.InfoContext(ctx, "bench snapshot captured", "snapshot", sn.ID, "session", sn.Session,
		"history", len(history), "state_hash", sn.StateHash)
	return sn, nil
}

// checkHash refuses a snapshot whose stored state no longer hashes to its
// recorded state hash (the seed's load check): a run never runs on a
// state other than the one captured.
func checkHash(sn bench.Snapshot) error {
	if got := bench.StateHash(sn); got != sn.StateHash {
		return fmt.Errorf("benchmark snapshot %s: state hash mismatch: stored %s, its state hashes to %s", sn.ID, sn.StateHash, got)
	}
	return nil
}

// newID makes a random id with a prefix.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b)
}
