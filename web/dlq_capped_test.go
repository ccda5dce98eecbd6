package web

import "testing"

// /dlq says when its list stops short of the letters that match: more
// match than it pages through, or its last page has a next one (which it
// then does not link to, as that page is refused).
func TestDLQCapped(t *testing.T) {
	counts := deadView{Total: 1500, ByKind: []kindCount{{Kind: "a", N: 1200}, {Kind: "b", N: 300}}}
	for _, tc := range []struct {
		name        string
		v           dlqView
		capped      bool
		matching    int64
		nextAllowed bool
	}{
		{"every kind", dlqView{Counts: counts, Pager: Pager{Page: 1, HasNext: true}}, true, 1500, true},
		{"a kind over the cap", dlqView{Kind: "a", Counts: counts, Pager: Pager{Page: 1, HasNext: true}}, true, 1200, true},
		{"a kind under it", dlqView{Kind: "b", Counts: counts, Pager: Pager{Page: 1, HasNext: true}}, false, 300, true},
		{"since, last page with more", dlqView{Since: "7d", Counts: counts, Pager: Pager{Page: dlqMaxPages, HasNext: true}}, true, 0, false},
		{"since, last page, no more", dlqView{Since: "7d", Counts: counts, Pager: Pager{Page: dlqMaxPages}}, false, 0, false},
	} {
		v := tc.v
		v.capped()
		if v.Capped != tc.capped || v.Matching != tc.matching || v.Pager.HasNext != tc.nextAllowed || v.Cap != 1000 {
			t.Errorf("%s: capped %v, matching %d, next %v, cap %d; want %v, %d, %v, 1000", tc.name, v.Capped, v.Matching,
				v.Pager.HasNext, v.Cap, tc.capped, tc.matching, tc.nextAllowed)
		}
	}
}
