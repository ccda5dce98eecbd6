package memstatus

import (
	"reflect"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/store"
)

func TestBudgetKey(t *testing.T) {
	for _, tt := range []struct{ workspace, want string }{
		{"", budget.KeyGlobal},
		{"/home/dev/proj", "workspace:/home/dev/proj"},
		{"/home/dev/with space", "workspace:/home/dev/with space"},
	} {
		if got := budgetKey(tt.workspace); got != tt.want {
			t.Errorf("budgetKey(%q) = %q, want %q", tt.workspace, got, tt.want)
		}
	}
}

func TestFoldQueue(t *testing.T) {
	paused := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	count := func(kind, state string, n int64) store.JobCount {
		return store.JobCount{Kind: kind, Queue: "llm", State: state, N: n}
	}
	for _, tt := range []struct {
		name   string
		counts []store.JobCount
		dead   map[string]int64
		queues []*rivertype.Queue
		want   Queue
	}{
		{name: "nothing", want: Queue{Of: "all workspaces"}},
		{
			name: "states summed over kinds; pending is available; finished jobs not counted",
			counts: []store.JobCount{
				count("retro_session", "available", 2), count("consolidate", "available", 1), count("retro_session", "pending", 4),
				count("retro_session", "scheduled", 3), count("reflect_task", "running", 1), count("retro_session", "retryable", 5),
				count("retro_session", "completed", 100), count("retro_session", "cancelled", 7), count("retro_session", "discarded", 2),
			},
			want: Queue{Of: "all workspaces", Available: 7, Scheduled: 3, Running: 1, Retryable: 5},
		},
		{
			name: "dead letters of every kind",
			dead: map[string]int64{"retro_session": 2, "consolidate": 1},
			want: Queue{Of: "all workspaces", Dead: 3},
		},
		{
			name:   "another queue paused: named, learning not paused",
			queues: []*rivertype.Queue{{Name: "default", PausedAt: &paused}, {Name: "llm"}},
			want:   Queue{Of: "all workspaces", PausedQueues: []string{"default"}},
		},
		{
			name:   "llm paused by mull, with its reason",
			queues: []*rivertype.Queue{{Name: "default"}, {Name: "llm", PausedAt: &paused, Metadata: []byte(`{"paused_reason":"the API key was refused"}`)}},
			want:   Queue{Of: "all workspaces", Paused: true, PausedReason: "the API key was refused", PausedQueues: []string{"llm"}},
		},
		{
			name:   "llm paused by an operator: no reason",
			queues: []*rivertype.Queue{{Name: "llm", PausedAt: &paused, Metadata: []byte(`{}`)}},
			want:   Queue{Of: "all workspaces", Paused: true, PausedQueues: []string{"llm"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := foldQueue(tt.counts, tt.dead, tt.queues); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("foldQueue = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
