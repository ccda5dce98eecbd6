package llm

import "testing"

// The usage of a stream is found however its bytes are split across
// reads: in the last data line that has one (a usage-only chunk after
// the finish chunk, as DeepSeek sends with include_usage), a last line
// without its newline too; a chunk whose usage is null is no usage.
func TestUsageScanSplitReads(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n" +
		": keep-alive\n\n" +
		"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":7,\"prompt_cache_hit_tokens\":64,\"prompt_cache_miss_tokens\":56}}\n\n" +
		"data: [DONE]"
	for _, size := range []int{1, 7, 64, len(stream)} {
		var s usageScan
		for p := []byte(stream); len(p) > 0; {
			n := min(size, len(p))
			s.write(p[:n], true)
			p = p[n:]
		}
		u, ok := s.usage(true)
		if !ok || u.PromptTokens != 120 || u.CompletionTokens != 7 || u.CacheHitTokens != 64 || u.CacheMissTokens != 56 {
			t.Errorf("reads of %d bytes: %+v %v", size, u, ok)
		}
	}
	var none usageScan
	none.write([]byte("data: {\"usage\":null}\n\ndata: [DONE]\n\n"), true)
	if _, ok := none.usage(true); ok {
		t.Error("a null usage counted as usage")
	}
}
