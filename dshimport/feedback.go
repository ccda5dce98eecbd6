package dshimport

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mullhq/mull/dshlog"
	"github.com/mullhq/mull/events"
)

// feedbackMark is the message-feedback file as the last scan read it, so
// an unchanged file is not ingested again on every watch tick.
type feedbackMark struct {
	size int64
	mod  time.Time
}

// importFeedback ingests the home's per-message 👍/👎
// (dshlog.MessageFeedbackFile) for the sessions whose logs the home holds,
// after their logs, and returns the mark to keep. Each revision of an
// item is one event with a stable id, so reading the file again stores
// nothing new. A file or item not in DSH's format is in Summary.Errors.
func (s *scan) importFeedback(ctx context.Context, paths []string, last feedbackMark) (feedbackMark, error) {
	path := dshlog.MessageFeedbackFile(s.Home)
	info, err := os.Stat(path)
	if err != nil {
		return feedbackMark{}, nil // none yet (the headless profile never writes one)
	}
	mark := feedbackMark{info.Size(), info.ModTime()}
	if mark == last {
		return mark, nil
	}
	rows, err := dshlog.ReadMessageFeedback(path)
	if err != nil {
		s.sum.Errors = append(s.sum.Errors, FileError{Path: path, Error: err.Error()})
		return feedbackMark{}, nil
	}
	logs := map[string]bool{}
	for _, p := range paths {
		logs[filepath.Base(filepath.Dir(p))] = true
	}
	ids := make([]string, 0, len(rows))
	for id := range rows {
		if logs[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var batch []events.Event
	for _, id := range ids {
		evs, err := dshlog.FeedbackEvents(id, "", rows[id])
		if err != nil {
			s.sum.Errors = append(s.sum.Errors, FileError{Path: path, Error: err.Error()})
		}
		for _, e := range evs {
			if ferr := events.Validate(&e, s.Now()); ferr != nil {
				s.sum.Skipped++
				s.Logger.Warn("message feedback left out", "path", path, "id", e.ID, "error", ferr.Error())
				continue
			}
			batch = append(batch, e)
		}
	}
	s.sum.Events += len(batch)
	for len(batch) > 0 {
		n := min(len(batch), s.BatchSize)
		fileErr, err := s.ingest(ctx, batch[:n])
		if err != nil {
			return last, err
		}
		if fileErr != nil {
			s.sum.Errors = append(s.sum.Errors, FileError{Path: path, Error: fileErr.Error()})
			return feedbackMark{}, nil
		}
		batch = batch[n:]
	}
	if s.DryRun {
		return last, nil
	}
	return mark, nil
}
