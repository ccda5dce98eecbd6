package dshimport

import (
	"context"
	"errors"
	"time"
)

// Watch imports what DSH writes until ctx ends: one scan now, then one
// every interval, each reading only the files that changed. Problems are
// logged (each once, until it changes), not returned: DSH may not have run
// yet, a file may be corrupt, the database may be restarting. It returns
// nil when ctx ends, and an error only when it cannot start.
func (im *Importer) Watch(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return errors.New("dshimport: watch interval must be positive")
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	return im.watch(ctx, t.C)
}

// watch scans now and at every tick; tests drive the ticks.
func (im *Importer) watch(ctx context.Context, ticks <-chan time.Time) error {
	c, err := im.withDefaults()
	if err != nil {
		return err
	}
	log := c.Logger
	var lastErr string
	fileErrs := map[string]string{}   // logged already, by path
	incomplete := map[string]string{} // likewise
	for {
		sum, err := im.Scan(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if err.Error() != lastErr {
				log.Warn("DSH log watch: scan failed; trying again", "home", c.Home, "error", err)
			}
			lastErr = err.Error()
		default:
			lastErr = ""
			if sum.Events > 0 {
				log.Info("DSH session events imported", "files", sum.Read, "events", sum.Events,
					"stored", sum.Stored, "duplicates", sum.Duplicates)
			}
		}
		now := map[string]string{}
		for _, e := range sum.Errors {
			if fileErrs[e.Path] != e.Error {
				log.Error("DSH session log cannot be read past a point", "path", e.Path, "error", e.Error)
			}
			now[e.Path] = e.Error
		}
		still := map[string]string{}
		for _, f := range sum.Incomplete {
			if incomplete[f.Path] != f.Reason {
				log.Warn("DSH session log imported incompletely", "path", f.Path, "session_id", f.SessionID, "reason", f.Reason)
			}
			still[f.Path] = f.Reason
		}
		if err == nil {
			fileErrs, incomplete = now, still
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
		}
	}
}
