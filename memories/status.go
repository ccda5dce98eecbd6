package memories

import (
	"context"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/store"
)

// LibraryStatus is one library's part of memory_status: its memories by
// kind and state, and the last things that happened to it.
type LibraryStatus struct {
	// Library is "workspace" or "global"; Name the workspace, or "global".
	Library string `json:"library"`
	Name    string `json:"name"`
	// Read: the workspace's scope serves this library.
	Read bool `json:"read"`
	// Counts are by kind, then state: live, superseded, quarantined,
	// deprecated, and invalidated (forgotten, expired or removed).
	Counts map[string]map[string]int64 `json:"counts"`
	// Totals are Counts summed over the kinds.
	Totals map[string]int64 `json:"totals"`
	// Quarantined counts the memories held by the trust gate; Redacted
	// those whose text had a credential redacted.
	Quarantined         int64      `json:"quarantined"`
	Redacted            int64      `json:"redacted"`
	LastRetroAt         *time.Time `json:"last_retro_at"`
	LastConsolidationAt *time.Time `json:"last_consolidation_at"`
	LastErrorAt         *time.Time `json:"last_error_at"`
}

// LibraryStatuses reads the status of a workspace's library and of the
// global one, in two statements; the global library alone when workspace
// is "".
func (s *Service) LibraryStatuses(ctx context.Context, workspace string) (scope memory.Scope, libs []LibraryStatus, err error) {
	scope = s.scopeOf(workspace) // the workspace's own, at this moment
	names := []string{workspace, ""}
	if workspace == "" {
		names = []string{""}
	}
	counts, err := s.store.LibraryCounts(ctx, s.store.DB, names)
	if err != nil {
		return scope, nil, err
	}
	wsT, globalT, err := s.store.LibraryTimesOf(ctx, s.store.DB, workspace)
	if err != nil {
		return scope, nil, err
	}
	for _, name := range names {
		l := LibraryStatus{Library: "workspace", Name: name, Read: scope.ReadsWorkspace(),
			Counts: map[string]map[string]int64{}, Totals: map[string]int64{}}
		t := wsT
		if name == "" {
			l.Library, l.Name, l.Read, t = "global", "global", scope.ReadsGlobal(), globalT
		}
		for _, c := range counts {
			if c.Workspace != name {
				continue
			}
			if l.Counts[c.Kind] == nil {
				l.Counts[c.Kind] = zeroBuckets()
			}
			l.Counts[c.Kind][c.Bucket] += c.N
			l.Totals[c.Bucket] += c.N
			l.Redacted += c.Redacted
		}
		for _, b := range buckets {
			l.Totals[b] += 0
		}
		l.Quarantined = l.Totals[store.CountQuarantined]
		l.LastRetroAt, l.LastConsolidationAt, l.LastErrorAt = timePtr(t.LastRetro), timePtr(t.LastConsolidation), timePtr(t.LastError)
		libs = append(libs, l)
	}
	return scope, libs, nil
}

// Scope is the memory scope the service serves.
func (s *Service) Scope() memory.Scope { return s.scope }

var buckets = []string{store.CountLive, store.CountSuperseded, store.CountQuarantined, store.CountDeprecated, store.CountInvalidated}

func zeroBuckets() map[string]int64 {
	m := make(map[string]int64, len(buckets))
	for _, b := range buckets {
		m[b] = 0
	}
	return m
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
