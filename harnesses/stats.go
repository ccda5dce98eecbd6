package harnesses

import (
	"context"

	"github.com/mullhq/mull/store"
)

// Stats are the harness's counts for /metrics: refinements by scope and
// source, their edits by result, reviews by outcome, entries by kind and
// scope. They are read from the store, so every process reports the same.
type Stats = store.HarnessStatCounts

// Stats counts the shared harness store.
func (s *Service) Stats(ctx context.Context) (Stats, error) { return s.store.HarnessStats(ctx) }
