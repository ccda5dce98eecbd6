package memory_test

import (
	"slices"
	"testing"

	"github.com/mullhq/mull/learn/memory"
)

func TestNormalizeRelevance(t *testing.T) {
	tests := []struct {
		name      string
		raw, want []float64
	}{
		{"none", nil, []float64{}},
		{"best is 1", []float64{4, 2, 1}, []float64{1, 0.5, 0.25}},
		{"any scale", []float64{0.004, 0.002}, []float64{1, 0.5}},
		{"a zero stays 0", []float64{3, 0}, []float64{1, 0}},
		{"all zero", []float64{0, 0}, []float64{0, 0}},
		{"negative counts as 0", []float64{2, -1}, []float64{1, 0}},
		{"all negative", []float64{-2, -1}, []float64{0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memory.NormalizeRelevance(tt.raw); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v; want %v", got, tt.want)
			}
		})
	}
}

func TestTermsMatched(t *testing.T) {
	tests := []struct {
		norm  string
		terms []string
		want  int
	}{
		{"deploy to staging with make", []string{"deploy", "staging", "prod"}, 2},
		{"redeployment is slow", []string{"deploy"}, 1},
		{"请用中文回答", []string{"中文", "英文"}, 1},
		{"anything", nil, 0},
	}
	for _, tt := range tests {
		if got := memory.TermsMatched(tt.norm, tt.terms); got != tt.want {
			t.Errorf("TermsMatched(%q, %q) = %d; want %d", tt.norm, tt.terms, got, tt.want)
		}
	}
}

func TestSearchScore(t *testing.T) {
	tests := []struct {
		name      string
		seed      float64
		matched   int
		relevance float64
		want      float64
	}{
		{"seed alone", 9, 0, 0, 9},
		{"a term matched adds 1", 9, 2, 0, 11},
		{"the most relevant adds the weight", 9, 1, 1, 10 + memory.RelevanceWeight},
		{"half as relevant, half the weight", 9, 1, 0.5, 10 + memory.RelevanceWeight/2.0},
		{"relevance past 1 is 1", 9, 1, 7, 10 + memory.RelevanceWeight},
		{"negative relevance is 0", 9, 1, -3, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memory.SearchScore(tt.seed, tt.matched, tt.relevance); got != tt.want {
				t.Fatalf("got %v; want %v", got, tt.want)
			}
		})
	}
	// At equal seed and terms matched, the more relevant text ranks first;
	// two importance points more outrank the whole relevance.
	if memory.SearchScore(9, 1, 1) <= memory.SearchScore(9, 1, 0.3) {
		t.Error("more relevant does not outrank less relevant at equal seed")
	}
	if memory.SearchScore(9+memory.RelevanceWeight+0.5, 1, 0) <= memory.SearchScore(9, 1, 1) {
		t.Error("the seed score no longer matters")
	}
}
