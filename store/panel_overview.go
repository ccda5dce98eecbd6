package store

import "context"

// LLMCallPage lists call records for the panel's /llm page: f's filter
// (f.Limit rows, at most 1000), after skipping f.Offset rows, newest
// first. It is ListLLMCalls with the panel's smaller cap.
func (s *Store) LLMCallPage(ctx context.Context, f LLMCallFilter) ([]LLMCall, error) {
	return s.listLLMCalls(ctx, f, 1000)
}
