package wsconfig

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"time"

	"github.com/mullhq/mull/config"
)

// WatchInterval is how often `mull serve` and `mull worker` look at the
// config file and reload the API's settings. Polling a stat was simpler
// than a file-event dependency and sees an editor's rename-over-the-file
// as well as a write in place.
const WatchInterval = 2 * time.Second

// hashAlways is the size up to which the file is read and hashed on every
// tick. A stat alone misses an edit that keeps the size within the
// filesystem's mtime resolution (a value changed from 1 to 2 in the same
// second, on a filesystem with one-second or coarser times); a config
// file is a few kilobytes, so reading it every two seconds costs nothing.
// Only a larger file is trusted to have changed only when its stat did.
const hashAlways = 1 << 20

// stamp is what the watcher saw of the file: its stat and its content hash.
type stamp struct {
	mod  time.Time
	size int64
	sum  [32]byte
}

// Check reloads the config file when its content changed since the last
// look (its content hash, read on every call for a file of a config
// file's size; a larger one only when its modification time or size
// changed). A file that fails to load keeps the last good one: the error
// is logged (a warning naming the key and the problem) and returned, and
// the same bad content is not reported again. changed is true when a new
// file was taken in. Without a file it does nothing.
//
// Only the per-workspace settings and the global keys they fall back to
// (memory.scope, ledger.mode, digest.quotas) take a reloaded value;
// everything else in the file needs a restart.
func (s *Service) Check() (changed bool, err error) {
	if s.src.File == "" {
		if s.file.Load() == nil {
			s.setFile(config.Config{})
		}
		return false, nil
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	fi, err := os.Stat(s.src.File)
	if err != nil {
		return false, s.refuse(&config.Error{Key: "config", Problem: err.Error()})
	}
	if s.file.Load() != nil && fi.Size() > hashAlways && fi.ModTime().Equal(s.seen.mod) && fi.Size() == s.seen.size {
		return false, nil
	}
	b, err := os.ReadFile(s.src.File)
	if err != nil {
		return false, s.refuse(&config.Error{Key: "config", Problem: err.Error()})
	}
	st := stamp{mod: fi.ModTime(), size: fi.Size(), sum: sha256.Sum256(b)}
	first := s.file.Load() == nil
	if !first && st.sum == s.seen.sum {
		s.seen = st
		return false, nil
	}
	s.seen = st
	// The whole file must load as at startup (defaults, environment,
	// validation): a half-valid file is not taken in part.
	if _, err := config.LoadBytes(b, s.src); err != nil {
		return false, s.refuse(err)
	}
	raw, err := config.ReadFile(b)
	if err != nil {
		return false, s.refuse(err)
	}
	s.setFile(raw)
	s.refused = ""
	if !first {
		s.log.Info("config file reloaded: per-workspace settings applied", "file", s.src.File, "workspaces", len(raw.Workspaces))
	}
	return !first, nil
}

// refuse logs why the file was not taken in. At startup (no good file
// yet) the caller fails instead.
func (s *Service) refuse(err error) error {
	if s.file.Load() == nil {
		return err
	}
	if err.Error() == s.refused {
		return err
	}
	s.refused = err.Error()
	var e *config.Error
	if errors.As(err, &e) {
		s.log.Warn("config file not reloaded; keeping the last good one", "file", s.src.File, "key", e.Key, "problem", e.Problem)
	} else {
		s.log.Warn("config file not reloaded; keeping the last good one", "file", s.src.File, "error", err.Error())
	}
	return err
}

// Run checks the file and reloads the API's settings on every tick until
// ctx ends. done, when not nil, gets each check's outcome (tests wait on
// it instead of sleeping).
func (s *Service) Run(ctx context.Context, ticks <-chan time.Time, done func(changed bool, err error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		changed, err := s.Check()
		if lerr := s.Load(ctx); lerr != nil && ctx.Err() == nil {
			s.log.Warn("workspace settings not reloaded from the database", "error", lerr.Error())
		}
		if done != nil {
			done(changed, err)
		}
	}
}
