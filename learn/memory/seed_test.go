package memory_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/memory"
)

// These tests pin the seed's numbers (002: promoteToGlobal, the `why` cap)
// with fixtures either side of each; the numbers are written as the seed
// gives them, not read from the code.

// scored is a trusted workspace memory whose Score is want: a fact of the
// given importance, recorded age days ago, used uses times.
func scored(t *testing.T, text string, imp int, age float64, uses int, want float64) memory.Memory {
	t.Helper()
	m := memory.Memory{ID: int64(len(text)), Workspace: "/home/dev/app", Kind: memory.Fact, Text: text, Importance: imp,
		Origin: memory.OriginTool, Uses: uses, RecordedAt: daysAgo(age), TTLDays: memory.NeverStale}
	if got := memory.Score(m, now); got != want {
		t.Fatalf("fixture %q scores %v, want %v", text, got, want)
	}
	return m
}

func promoted(ms []memory.Memory) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

// TestPromoteThreshold: a score of exactly 10 is promoted, 9.5 (the next
// score below it) is not, and neither is 9.
func TestPromoteThreshold(t *testing.T) {
	tests := []struct {
		name    string
		m       memory.Memory
		promote bool
	}{
		{"10.5", scored(t, "ten and a half", 6, 2, 1, 10.5), true},
		{"exactly 10", scored(t, "exactly ten points", 6, 2, 0, 10), true},
		{"exactly 10 from uses", scored(t, "ten points from uses", 5, 10, 4, 10), true},
		{"9.5", scored(t, "nine and a half points", 5, 2, 1, 9.5), false},
		{"9", scored(t, "nine points at the most", 5, 2, 0, 9), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := memory.Promote([]memory.Memory{tt.m}, nil, now)
			if (len(got) == 1) != tt.promote {
				t.Fatalf("score %v: promoted %v, want promoted %v", memory.Score(tt.m, now), promoted(got), tt.promote)
			}
		})
	}
}

// TestPromoteNeverExternal: an entry from the web, a tool or a document
// is never promoted, even when it alone scores 10 or more (its importance
// is capped at 5, but fresh and often used it still reaches 12.5); the
// same entry with src user or agent, or none, is.
func TestPromoteNeverExternal(t *testing.T) {
	for _, tt := range []struct {
		src     memory.Src
		promote bool
	}{
		{memory.SrcWeb, false}, {memory.SrcTool, false}, {memory.SrcDoc, false},
		{memory.SrcUser, true}, {memory.SrcAgent, true}, {"", true},
	} {
		m := memory.Memory{ID: 1, Workspace: "/home/dev/app", Kind: memory.Fact, Text: "the docs say retries are 5",
			Importance: 9, Src: tt.src, Origin: memory.OriginTool, Uses: 5, RecordedAt: daysAgo(0.5), TTLDays: memory.NeverStale}
		if s := memory.Score(m, now); s < 10 {
			t.Fatalf("src %q: fixture scores %v, under the threshold", tt.src, s)
		}
		if got := memory.Promote([]memory.Memory{m}, nil, now); (len(got) == 1) != tt.promote {
			t.Errorf("src %q: promoted %v, want promoted %v", tt.src, promoted(got), tt.promote)
		}
	}
}

// TestPromoteAtMostThree: five entries above the threshold, the best
// three go.
func TestPromoteAtMostThree(t *testing.T) {
	ws := []memory.Memory{
		scored(t, "eleven points here", 7, 2, 0, 11),
		scored(t, "thirteen points here", 8, 0.5, 0, 13),
		scored(t, "ten points exactly", 6, 2, 0, 10),
		scored(t, "twelve points here", 8, 2, 0, 12),
		scored(t, "ten and a half here", 6, 2, 1, 10.5),
	}
	got := promoted(memory.Promote(ws, nil, now))
	if want := []string{"thirteen points here", "twelve points here", "eleven points here"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("promoted %v, want %v", got, want)
	}
}

// TestInvalidReasonKeeps60: an invalidation reason keeps 60 characters
// (the seed's `why`) and loses the 61st.
func TestInvalidReasonKeeps60(t *testing.T) {
	m := memory.Memory{ID: 1, Kind: memory.Fact, Text: "uses pnpm", Origin: memory.OriginTool, RecordedAt: daysAgo(3)}
	sixty := strings.Repeat("理", 59) + "由"
	if got := m.Invalidated(now, sixty, 0).InvalidReason; got != sixty {
		t.Errorf("a 60-character reason became %q (%d)", got, len([]rune(got)))
	}
	if got := m.Invalidated(now, sixty+"!", 0).InvalidReason; got != sixty {
		t.Errorf("a 61-character reason became %q (%d), want its first 60", got, len([]rune(got)))
	}
}
