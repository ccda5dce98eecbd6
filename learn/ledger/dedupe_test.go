package ledger

import (
	"testing"
	"time"
)

func TestWarnDedupe(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	every := 60 * time.Second
	ev := EvidenceDigest(commandFact(nil).Evidence)
	warn := WarnDecision{Warn: true, Remember: true}
	for _, tc := range []struct {
		name  string
		m     WarnMemo
		ev    string
		after time.Duration
		want  WarnDecision
	}{
		{"first warning", WarnMemo{}, ev, every, warn},
		{"repeat within the interval", WarnMemo{Found: true, WarnedAt: now.Add(-59 * time.Second), Evidence: ev}, ev, every, WarnDecision{}},
		{"repeat as the interval ends", WarnMemo{Found: true, WarnedAt: now.Add(-60 * time.Second), Evidence: ev}, ev, every, warn},
		{"repeat after the interval", WarnMemo{Found: true, WarnedAt: now.Add(-61 * time.Second), Evidence: ev}, ev, every, warn},
		{"evidence changed", WarnMemo{Found: true, WarnedAt: now.Add(-time.Second), Evidence: "other"}, ev, every, warn},
		{"evidence not kept", WarnMemo{Found: true, WarnedAt: now.Add(-time.Second)}, ev, every, WarnDecision{}},
		{"dedupe off", WarnMemo{Found: true, WarnedAt: now}, ev, 0, WarnDecision{Warn: true}},
		// The seed's 256 per session: 255 entries leave room, 256 evict.
		{"255 entries", WarnMemo{Entries: 255}, ev, every, warn},
		{"256 entries", WarnMemo{Entries: 256}, ev, every, WarnDecision{Warn: true, Remember: true, EvictOldest: true}},
		{"257 entries", WarnMemo{Entries: 257}, ev, every, WarnDecision{Warn: true, Remember: true, EvictOldest: true}},
		{"full but known", WarnMemo{Found: true, WarnedAt: now.Add(-2 * every), Entries: 256}, ev, every, warn},
	} {
		if got := WarnDedupe(tc.m, tc.ev, now, tc.after); got != tc.want {
			t.Errorf("%s: WarnDedupe = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if DedupeMax != 256 {
		t.Errorf("DedupeMax = %d, the seed's is 256", DedupeMax)
	}
}

func TestEvidenceDigest(t *testing.T) {
	a := commandFact(nil).Evidence
	b := commandFact(nil).Evidence
	b[0].StderrSignature = "ETIMEDOUT at 12:00:01"
	if EvidenceDigest(a) != EvidenceDigest(b) {
		t.Error("a different stderr changed the digest")
	}
	b[0].ExitCode = exit(2)
	if EvidenceDigest(a) == EvidenceDigest(b) {
		t.Error("a different exit code kept the digest")
	}
	c := commandFact(nil).Evidence
	c[1] = officialEnv
	if EvidenceDigest(a) == EvidenceDigest(c) {
		t.Error("a different precondition kept the digest")
	}
}
