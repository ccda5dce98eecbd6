package retrosession_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// settings is each workspace's API layer, resolved by config.Resolve.
type settings map[string]config.Settings

func (s settings) Effective(ws string) config.Effective {
	return config.Resolve(ws, config.Layers{API: s[ws]})
}

// A workspace whose retro switch is off gets no retro: the job completes
// (not a dead letter: the switch is no failure) and asks the model nothing; its scope setting
// decides the library a retro writes when it runs.
func TestRetroSwitchedOffForWorkspace(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := startRetros(t, s, retros{})
		session(t, s, "session-off")
		set := settings{ws: {config.WSRetro: "false"}}
		e.worker.Workspaces = set
		job := &river.Job[retrosession.Args]{JobRow: &rivertype.JobRow{ID: 424242, Kind: "retro_session", Attempt: 1},
			Args: retrosession.Args{SessionID: "session-off"}}
		if err := e.worker.Work(context.Background(), job); err != nil || len(e.fake.Requests()) != 0 {
			t.Fatalf("retro off: %v, %d model calls", err, len(e.fake.Requests()))
		}
		if ms, err := s.ListMemories(context.Background(), s.DB, store.MemoryFilter{Workspaces: []string{ws, ""}, All: true}); err != nil || len(ms) != 0 {
			t.Fatalf("retro off wrote memories: %d %v", len(ms), err)
		}
		if got := retrosession.LibraryOf(e.worker, ws); got != ws {
			t.Fatalf("library under the default scope: %q", got)
		}
		set[ws] = config.Settings{config.WSScope: "global"}
		if got := retrosession.LibraryOf(e.worker, ws); got != "" {
			t.Fatalf("library under the workspace's scope global: %q", got)
		}
	})
}
