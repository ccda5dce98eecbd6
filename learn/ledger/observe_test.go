package ledger

import (
	"slices"
	"strings"
	"testing"
)

func TestObserveTable(t *testing.T) {
	active := &Fact{Status: Active, Current: true}
	stale := &Fact{Status: Stale, Current: true}
	resolved := &Fact{Status: Resolved, Current: true}
	for _, tc := range []struct {
		name string
		mode Mode
		o    Observed
		want ObserveStep
	}{
		{"off", ModeOff, Observed{Class: ClassCommandFailure, Current: active, Verdict: VerdictWarn}, ObserveStep{Effect: EffectNone}},
		// The lease holder settles.
		{"holder succeeded", ModeBlock, Observed{Holder: true, Class: ClassSuccess, Current: stale}, ObserveStep{Effect: EffectResolved, ForgetWarning: true}},
		{"holder failed", ModeWarn, Observed{Holder: true, Class: ClassCommandFailure, Current: active}, ObserveStep{Effect: EffectEvidence, ForgetWarning: true}},
		{"holder missing file", ModeBlock, Observed{Holder: true, Class: ClassFileMissing, Current: stale}, ObserveStep{Effect: EffectEvidence, ForgetWarning: true}},
		{"holder proved nothing", ModeBlock, Observed{Holder: true, Class: ClassNothing, Current: active}, ObserveStep{Effect: EffectReleased}},
		// Only the holder settles a leased fact.
		{"non-holder failed", ModeWarn, Observed{LeasedByOther: true, Class: ClassCommandFailure, Current: active, Verdict: VerdictAllow}, ObserveStep{Effect: EffectNone}},
		{"non-holder succeeded", ModeWarn, Observed{LeasedByOther: true, Class: ClassSuccess, Current: active, Verdict: VerdictAllow}, ObserveStep{Effect: EffectNone}},
		// No lease.
		{"first failure", ModeWarn, Observed{Class: ClassCommandFailure}, ObserveStep{Effect: EffectRecorded}},
		{"failure after resolution", ModeWarn, Observed{Class: ClassFileMissing, Current: resolved}, ObserveStep{Effect: EffectRecorded, Supersede: true}},
		{"repeat, warn mode", ModeWarn, Observed{Class: ClassCommandFailure, Current: active, Verdict: VerdictBlock}, ObserveStep{Effect: EffectEvidence, Duplicate: true, Note: NoteWarn}},
		{"repeat of a warn fact", ModeWarn, Observed{Class: ClassFileMissing, Current: active, Verdict: VerdictWarn}, ObserveStep{Effect: EffectEvidence, Duplicate: true, Note: NoteWarn}},
		{"repeat, block mode: no note", ModeBlock, Observed{Class: ClassCommandFailure, Current: active, Verdict: VerdictBlock}, ObserveStep{Effect: EffectEvidence, Duplicate: true}},
		{"failure of a stale fact", ModeWarn, Observed{Class: ClassFileMissing, Current: stale, Verdict: VerdictStaleAllow}, ObserveStep{Effect: EffectEvidence, Note: NoteStale}},
		{"failure once due", ModeWarn, Observed{Class: ClassCommandFailure, Current: active, Verdict: VerdictAllow}, ObserveStep{Effect: EffectEvidence}},
		{"success resolves", ModeWarn, Observed{Class: ClassSuccess, Current: active, Verdict: VerdictWarn}, ObserveStep{Effect: EffectResolved}},
		{"success of a stale fact", ModeBlock, Observed{Class: ClassSuccess, Current: stale, Verdict: VerdictStaleAllow}, ObserveStep{Effect: EffectResolved, Note: NoteStale}},
		{"success, no fact", ModeWarn, Observed{Class: ClassSuccess}, ObserveStep{Effect: EffectNone}},
		{"success, resolved fact", ModeWarn, Observed{Class: ClassSuccess, Current: resolved}, ObserveStep{Effect: EffectNone}},
		{"nothing proved", ModeWarn, Observed{Class: ClassNothing, Current: active, Verdict: VerdictWarn}, ObserveStep{Effect: EffectNone}},
	} {
		if got := Observe(tc.mode, tc.o); got != tc.want {
			t.Errorf("%s: Observe = %s, want %s", tc.name, got, tc.want)
		}
	}
}

var ws0 = retryAt

func TestFSWitnesses(t *testing.T) {
	ws, err := FSWitnesses("/ws", "x.txt", "/abs/workspace/x.txt", Present, "v1")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Path)
		if w.Observed != Present || w.Version != "v1" || w.Kind != WitnessFileState || w.Role != Precondition {
			t.Errorf("witness %+v", w)
		}
	}
	if !slices.Equal(keys, []string{"/ws\x00x.txt", "/ws/x.txt", "/abs/workspace/x.txt"}) {
		t.Errorf("keys %q", keys)
	}
	// The file fact recorded for the same read is staled by it.
	f := NewFileFact("/ws", FileFingerprint("x.txt", "/ws"), FileKeys("/ws", "x.txt"), ws0)
	if v, _ := VerdictFor(f, ws, ws0); v != VerdictStaleAllow {
		t.Errorf("verdict %s", v)
	}
	// Display path only.
	if ws, err := FSWitnesses("/ws", "", "/abs/y", Absent, ""); err != nil || len(ws) != 1 || ws[0].Path != "/abs/y" {
		t.Errorf("display only: %+v %v", ws, err)
	}
	for _, tc := range []struct{ model, display, observed, version, want string }{
		{"", "", Absent, "", "display_path: required"},
		{"", "/a", "gone", "", `observed: "gone" is not present or absent`},
		{"", "/a", Present, "", "version: required"},
		{"", "/a", Absent, "v", "version: must be empty"},
	} {
		_, err := FSWitnesses("/ws", tc.model, tc.display, tc.observed, tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FSWitnesses(%+v) error %v, want %q", tc, err, tc.want)
		}
	}
}
