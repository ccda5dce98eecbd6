package retro_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/retro"
)

func TestParseTruncated(t *testing.T) {
	const full = `{"lessons": [{"text": "go test failed -> wrong dir -> cd to the module root", "importance": 7}],
 "facts": [{"text": "the repo uses pnpm"}],
 "resources": [],
 "methods": [{"text": "flaky test -> rerun alone -> isolates state"}],
 "handoff": ["Store migrated.", "Postgres fails.", "Next: fix 0007."],
 "playbooks": [{"slug": "add-db-migration", "steps": ["write it", "test it"]}],
 "supersede": [{"kind": "facts", "text": "the repo uses npm"}],
 "proposal": {"summary": "add a vet step"}}`
	cutAt := func(marker string) string {
		i := strings.Index(full, marker)
		if i < 0 {
			t.Fatalf("no %q in the fixture", marker)
		}
		return full[:i+len(marker)]
	}
	tests := []struct {
		name                         string
		content                      string
		lessons, facts, methods, hnd int
		wantErr                      bool
	}{
		{"cut in the proposal", cutAt(`{"summary": "add a`), 1, 1, 1, 3, false},
		{"cut in supersede drops it", cutAt(`"kind": "facts", "text": "the re`), 1, 1, 1, 3, false},
		{"cut in playbooks", cutAt(`"steps": ["write it"`), 1, 1, 1, 3, false},
		{"cut in the handoff drops it", cutAt(`"Postgres fails.",`), 1, 1, 1, 0, false},
		{"cut in methods drops methods", cutAt(`"flaky test ->`), 1, 1, 0, 0, false},
		{"cut in the first section", cutAt(`"go test failed`), 0, 0, 0, 0, true},
		{"not an object", `["lessons"`, 0, 0, 0, 0, true},
		{"complete answer keeps only additive sections", full, 1, 1, 1, 3, false},
		// A bad entry is Plan's to refuse alone; the answer still parses.
		{"bad entry in a complete section", `{"lessons": [{"text": "no arrows here"}], "facts": [`, 1, 0, 0, 0, false},
		{"short handoff is still refused", `{"handoff": ["one line"], "facts": [`, 0, 0, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := retro.ParseTruncated(tt.content)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseTruncated err = %v, want error %v", err, tt.wantErr)
			}
			if len(o.Lessons) != tt.lessons || len(o.Facts) != tt.facts || len(o.Methods) != tt.methods || len(o.Handoff) != tt.hnd {
				t.Errorf("got %d lessons, %d facts, %d methods, %d handoff lines", len(o.Lessons), len(o.Facts), len(o.Methods), len(o.Handoff))
			}
			if len(o.Playbooks)+len(o.Supersede)+len(o.Proposal) != 0 {
				t.Errorf("a non-additive section survived: %+v", o)
			}
		})
	}
}
