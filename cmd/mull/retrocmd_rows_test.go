package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/retro"
)

// `retro run` lists the rows behind its memory counts, and says when a
// retro from before mull kept them has none.
func TestPrintRetroRows(t *testing.T) {
	var out bytes.Buffer
	printRetroRows(&out, retrosession.Counts{Rows: true, Added: 1, AddedIDs: []int64{9}, Bumped: 2, BumpedIDs: []int64{3, 4}, Rejected: 1,
		RejectedItems: []retro.Refusal{{Section: "facts", Field: "facts[1]", Reason: `facts[1].src: "…" is not web or tool`}}})
	for _, want := range []string{"added:     #9\n", "bumped:    #3, #4\n", "rejected:  facts[1]: facts[1].src: \"…\" is not web or tool\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "before mull kept") {
		t.Errorf("a new retro is called old:\n%s", out.String())
	}
	out.Reset()
	printRetroRows(&out, retrosession.Counts{Bumped: 4, Rejected: 2})
	if got := out.String(); got != "  note:      this retro ran before mull kept the ids behind its counts\n" {
		t.Errorf("old retro: %q", got)
	}
}
