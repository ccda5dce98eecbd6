package store

import "testing"

// TestTextRelevance: at equal length a text saying a term more often is
// more relevant, at equal counts a shorter one is, and a term few hits
// contain counts for more than one most hits contain.
func TestTextRelevance(t *testing.T) {
	hits := []indexedHit{
		{id: 1, chars: 40, tf: []int{1, 0}}, // the common term once
		{id: 2, chars: 40, tf: []int{2, 0}}, // it twice
		{id: 3, chars: 80, tf: []int{1, 0}}, // once, in a longer text
		{id: 4, chars: 40, tf: []int{0, 1}}, // the rare term once
		{id: 5, chars: 40, tf: []int{1, 0}},
	}
	rel := textRelevance(hits, 2)
	if !(rel[1] > rel[0]) {
		t.Errorf("twice %v, once %v: want twice more relevant", rel[1], rel[0])
	}
	if !(rel[0] > rel[2]) {
		t.Errorf("short %v, long %v: want the shorter more relevant", rel[0], rel[2])
	}
	if !(rel[3] > rel[0]) {
		t.Errorf("rare term %v, common term %v: want the rare one more relevant", rel[3], rel[0])
	}
	for i, r := range rel {
		if r <= 0 {
			t.Errorf("hit %d: relevance %v; want above 0", hits[i].id, r)
		}
	}
	if got := textRelevance(nil, 2); len(got) != 0 {
		t.Errorf("no hits: %v", got)
	}
}
