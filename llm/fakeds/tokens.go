package fakeds

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// The fake counts tokens by a fixed, documented rule instead of a real
// tokenizer, so tests can predict usage exactly:
//
//   - a text is ceil(len(bytes)/4) tokens;
//   - a prompt is, for each message in order, messageOverhead framing
//     tokens (begin, role, end) plus its content's tokens;
//   - a completion is its content's tokens plus its reasoning's tokens.
const (
	bytesPerToken   = 4
	messageOverhead = 3
)

// TextTokens is how many tokens the fake counts for a text.
func TextTokens(s string) int { return (len(s) + bytesPerToken - 1) / bytesPerToken }

// PromptTokens is how many prompt tokens the fake counts for messages.
func PromptTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += messageOverhead + TextTokens(m.Content)
	}
	return n
}

// prefixCache emulates DeepSeek's prefix cache as its context-caching
// guide describes it for the V4 models (api-docs.deepseek.com/guides/kv_cache,
// "Cache Persistence and Hit Rules"): each cached prefix is an independent,
// complete unit, and a request hits a unit only if it matches all of it.
// Units are persisted
//
//  1. at each request's boundaries: the end of its input and the end of
//     its output (the input followed by the answer as an assistant
//     message), at their exact lengths;
//  2. where a request shares a prefix with an earlier one: that common
//     prefix becomes a unit for later requests, not for the request that
//     revealed it (the guide's example 2: after A+B, a request A+C misses,
//     and A+D then hits A). Common prefixes are found at storage-unit
//     boundaries, cut down to whole storage units;
//  3. at fixed token intervals along both (interval tokens; the guide
//     gives no number), so a long prefix that never ends a request is
//     still cached.
//
// A hit counts whole storage units only (unit tokens, 64: "the cache
// system uses 64 tokens as a storage unit; content less than 64 tokens will
// not be cached", the guide before V4): the longest unit matched, cut down
// to a multiple of unit. A unit is known by the hash of its token stream,
// so only a byte-identical prefix hits. Scopes (the model, and the user
// when asked) keep caches apart. It is not safe for concurrent use: the
// Server locks around it.
type prefixCache struct {
	// seen holds the hash at every storage-unit boundary of every request
	// so far: what common-prefix detection compares a new request with.
	seen map[prefixKey]struct{}
	// units are the persisted prefixes a later request can hit.
	units map[prefixKey]struct{}
}

// prefixKey is the hash of a token stream's first n tokens.
type prefixKey [sha256.Size]byte

// maxCacheKeys bounds the cache of a long-running fake (`mull serve
// --fake-llm`): past it, everything is forgotten, as DeepSeek clears
// unused prefixes after hours or days.
const maxCacheKeys = 1 << 20

func newPrefixCache() *prefixCache {
	return &prefixCache{seen: map[prefixKey]struct{}{}, units: map[prefixKey]struct{}{}}
}

// request returns how many tokens of a request hit, in whole units of
// unit tokens: the longest persisted unit its input matches fully. in and
// out are the hashes after each token of its input and of its input
// followed by its answer. Then it persists the units the request leaves:
// the ends of in and out, one every interval tokens along both, and the
// longest prefix in shares with an earlier request.
func (c *prefixCache) request(in, out []prefixKey, unit, interval int) int {
	if len(c.seen)+len(c.units) > maxCacheKeys {
		c.reset()
	}
	hit := 0
	for i, key := range in {
		if _, ok := c.units[key]; ok {
			hit = i + 1
		}
	}
	common := 0
	for i := unit - 1; i < len(in); i += unit {
		if _, ok := c.seen[in[i]]; !ok {
			break
		}
		common = i + 1
	}
	for _, ks := range [][]prefixKey{in, out} {
		if len(ks) > 0 {
			c.units[ks[len(ks)-1]] = struct{}{}
		}
		for i := interval - 1; interval > 0 && i < len(ks); i += interval {
			c.units[ks[i]] = struct{}{}
		}
	}
	if common > 0 {
		c.units[in[common-1]] = struct{}{}
	}
	for i := unit - 1; i < len(out); i += unit {
		c.seen[out[i]] = struct{}{}
	}
	return hit / unit * unit
}

// reset forgets every prefix.
func (c *prefixCache) reset() {
	clear(c.seen)
	clear(c.units)
}

// prefixKeys walks a prompt's token stream and returns the hash after
// each token: its length is the prompt's token count.
func prefixKeys(scope string, msgs []Message) []prefixKey {
	t := &tokenStream{h: sha256.New()}
	t.write(0, scope)
	for _, m := range msgs {
		t.token(1, "begin")
		t.token(2, m.Role)
		for s := m.Content; s != ""; {
			n := min(bytesPerToken, len(s))
			t.token(3, s[:n])
			s = s[n:]
		}
		t.token(1, "end")
	}
	return t.keys
}

// tokenStream hashes tokens one by one and keeps the hash after each.
type tokenStream struct {
	h    hash.Hash
	keys []prefixKey
}

// write feeds a tagged, length-prefixed piece to the hash so that no two
// different token streams hash alike.
func (t *tokenStream) write(tag byte, s string) {
	var hdr [1 + binary.MaxVarintLen64]byte
	hdr[0] = tag
	n := binary.PutUvarint(hdr[1:], uint64(len(s)))
	t.h.Write(hdr[:1+n])
	t.h.Write([]byte(s))
}

func (t *tokenStream) token(tag byte, s string) {
	t.write(tag, s)
	var key prefixKey
	t.h.Sum(key[:0])
	t.keys = append(t.keys, key)
}
