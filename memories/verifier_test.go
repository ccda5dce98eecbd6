package memories_test

import (
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Verifier names each recorded verifier as a sentence says it, and an old
// row's (” with a time) as not recorded.
func TestVerifier(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		at   time.Time
		by   string
		want string
	}{
		{time.Time{}, "", ""},
		{at, "", "someone (not recorded)"},
		{at, store.ActorPanel, "an admin (panel)"},
		{at, store.ActorAPI, "an admin (api)"},
		{at, store.ActorCLI, "an admin (cli)"},
		{at, store.ActorAgent, "an agent"},
		{at, memory.VerifiedByMerge, "no one (consolidation kept its newest source's record time)"},
	} {
		if got := memories.Verifier(memory.Memory{VerifiedAt: tt.at, VerifiedBy: tt.by}); got != tt.want {
			t.Errorf("Verifier(%v, %q) = %q, want %q", tt.at, tt.by, got, tt.want)
		}
	}
	// learn does not import store: the merge's marker is written twice.
	if memory.VerifiedByMerge != store.VerifiedByMerge {
		t.Fatalf("memory.VerifiedByMerge %q != store.VerifiedByMerge %q", memory.VerifiedByMerge, store.VerifiedByMerge)
	}
}
