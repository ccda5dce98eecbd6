package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mullhq/mull/negledger"
)

// The service's errors map to statuses: a bad field is a 400 naming it, an
// unknown fact a 404, a fact that kept changing a 503 with Retry-After: 1
// (so the plugin retries or applies its unreachable rule), wrapped or not.
func TestWriteLedgerError(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		want   string
	}{
		{&negledger.FieldError{Field: "tool_call_id", Problem: "required"}, http.StatusBadRequest, `"field": "tool_call_id"`},
		{fmt.Errorf("fact 9: %w", negledger.ErrNotFound), http.StatusNotFound, "fact 9"},
		{fmt.Errorf("observe: %w", negledger.ErrConflict), http.StatusServiceUnavailable, "3 rounds"},
		{errors.New("disk on fire"), http.StatusInternalServerError, "ledger: disk on fire"},
	} {
		rec := httptest.NewRecorder()
		writeLedgerError(rec, tc.err)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%v: %d %s; want %d with %q", tc.err, rec.Code, rec.Body, tc.status, tc.want)
		}
		if ra := rec.Header().Get("Retry-After"); (tc.status == http.StatusServiceUnavailable) != (ra == "1") {
			t.Errorf("%v: Retry-After %q", tc.err, ra)
		}
	}
}

// A retraction's reason is required and at most 500 characters: 500 is
// taken, 501 refused.
func TestCheckResolveReason(t *testing.T) {
	for reason, ok := range map[string]bool{"": false, "   ": false, "fixed upstream": true,
		strings.Repeat("é", 500): true, strings.Repeat("é", 501): false} {
		if got := CheckResolveReason(reason) == ""; got != ok {
			t.Errorf("%d runes: ok %v, want %v (%s)", len([]rune(reason)), got, ok, CheckResolveReason(reason))
		}
	}
}
