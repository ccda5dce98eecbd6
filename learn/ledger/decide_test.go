package ledger

import "testing"

func TestDecideTable(t *testing.T) {
	allow := Step{Answer: AnswerAllow}
	compete := Step{Compete: true}
	stale := Step{Compete: true, CommitStale: true}
	deny := Step{Answer: AnswerDeny, CountDenied: true}
	warn := Step{Answer: AnswerWarn}
	for _, tc := range []struct {
		mode Mode
		v    Verdict
		want Step
	}{
		{ModeOff, VerdictBlock, allow}, {ModeOff, VerdictWarn, allow}, {ModeOff, VerdictAllow, allow}, {ModeOff, VerdictStaleAllow, allow},
		{ModeWarn, "", allow}, {ModeBlock, "", allow},
		{ModeBlock, VerdictBlock, deny}, {ModeBlock, VerdictWarn, deny},
		{ModeWarn, VerdictBlock, warn}, {ModeWarn, VerdictWarn, warn},
		{ModeBlock, VerdictAllow, compete}, {ModeWarn, VerdictAllow, compete},
		{ModeBlock, VerdictStaleAllow, stale}, {ModeWarn, VerdictStaleAllow, stale},
		{"loud", VerdictWarn, deny}, {ModeWarn, "maybe", warn}, {ModeBlock, "maybe", deny},
	} {
		if got := Decide(tc.mode, tc.v); got != tc.want {
			t.Errorf("Decide(%s, %s) = %+v, want %+v", tc.mode, tc.v, got, tc.want)
		}
	}
}

func TestLosing(t *testing.T) {
	if a, denied := Losing(ModeBlock); a != AnswerInProgress || !denied {
		t.Errorf("Losing(block) = %s %v", a, denied)
	}
	if a, denied := Losing(ModeWarn); a != AnswerInProgress || denied {
		t.Errorf("Losing(warn) = %s %v", a, denied)
	}
	for _, tc := range []struct {
		mode Mode
		a    Answer
		want bool
	}{
		{ModeBlock, AnswerDeny, true}, {ModeBlock, AnswerInProgress, true}, {ModeWarn, AnswerInProgress, false},
		{ModeBlock, AnswerVerifyRetry, false}, {ModeWarn, AnswerWarn, false}, {ModeBlock, AnswerAllow, false},
	} {
		if got := Denies(tc.mode, tc.a); got != tc.want {
			t.Errorf("Denies(%s, %s) = %v", tc.mode, tc.a, got)
		}
	}
}
