package dshimport

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mullhq/mull/store"
	"github.com/mullhq/mull/store/storetest"
)

// A fork's log starts with the parent's history (its header's seedLength
// rows). A run that stops inside those rows and a later run that resumes
// past the header still skip them: the number is kept with the position.
func TestForkSeedRowsSkippedAcrossRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		home := t.TempDir()
		path := filepath.Join(home, "sessions", "--home-dev-x--", "session-fork", "session.jsonl")
		row := func(seq, text string) string {
			return `{"type":"assistant/message","seq":` + seq + `,"time":1795977438900,"data":{"turn":1,"message":{"id":"m` + seq +
				`","role":"assistant","content":[{"type":"text","text":"` + text + `"}]}}}` + "\n"
		}
		header := `{"type":"session","version":0,"id":"session-fork","createdAt":1795977438816,"cwd":"/home/dev/x","parentSession":"session-parent","origin":"fork","seedLength":3}` + "\n"
		writeLog(t, path, []byte(header+row("0", "the parent's first")+row("1", "the parent's second")))
		ing := newFakeIngest()
		im := newImporter(s, home, ing)
		scanOK(t, im)
		if rec := records(t, s)[path]; rec.SeedLength != 3 {
			t.Fatalf("record %+v: want seed length 3 kept", rec)
		}
		appendLog(t, path, []byte(row("2", "the parent's third")+row("3", "the fork's own")))
		scanOK(t, im)
		var got []string
		for id, ev := range ing.stored {
			if ev.Type == "assistant_message" {
				got = append(got, id)
			}
		}
		if len(got) != 1 || !strings.HasSuffix(got[0], ":3") {
			t.Fatalf("assistant messages stored %v, want only the fork's own (seq 3)", got)
		}
	})
}
