package harness

import "testing"

// The seed's gateOutcome table: declined, assessed, approved, failed.
func TestGateOutcome(t *testing.T) {
	for _, tt := range []struct {
		name             string
		approved         bool
		planned, applied int
		want             Outcome
	}{
		{"a rejected review is declined", false, 0, 0, Declined},
		{"a rejected review is declined whatever was planned", false, 2, 1, Declined},
		{"an approved review with an empty plan is assessed", true, 0, 0, Assessed},
		{"one applied edit of two is approved", true, 2, 1, Approved},
		{"every edit applied is approved", true, 1, 1, Approved},
		{"every edit rejected is failed", true, 2, 0, Failed},
	} {
		if got := GateOutcome(tt.approved, tt.planned, tt.applied); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}
