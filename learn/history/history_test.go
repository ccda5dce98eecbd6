package history

import (
	"testing"
	"time"
)

func TestLive(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	cases := []struct {
		name string
		f    Facts
		live bool
	}{
		{"pushed and recent", Facts{Pushed: true, LastEventAt: now.Add(-time.Minute), Now: now, MaxAge: day}, true},
		{"pushed, exactly max age", Facts{Pushed: true, LastEventAt: now.Add(-day), Now: now, MaxAge: day}, true},
		{"pushed, a second past max age", Facts{Pushed: true, LastEventAt: now.Add(-day - time.Second), Now: now, MaxAge: day}, false},
		{"pushed, a year old", Facts{Pushed: true, LastEventAt: now.AddDate(-1, 0, 0), Now: now, MaxAge: day}, false},
		{"imported only, recent", Facts{LastEventAt: now.Add(-time.Minute), Now: now, MaxAge: day}, false},
		{"imported only, old", Facts{LastEventAt: now.AddDate(0, 0, -3), Now: now, MaxAge: day}, false},
		{"pushed, no age limit", Facts{Pushed: true, LastEventAt: now.AddDate(-5, 0, 0), Now: now}, true},
		{"imported, no age limit", Facts{LastEventAt: now, Now: now}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live, why := Live(c.f)
			if live != c.live {
				t.Fatalf("Live = %v (%q), want %v", live, why, c.live)
			}
			if !live && why == "" {
				t.Fatal("no reason given for a historical session")
			}
		})
	}
}
