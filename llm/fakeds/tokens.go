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

// prefixCache emulates DeepSeek's prefix cache. A prompt is a stream of
// tokens (the framing and 4-byte pieces of content above); its hash is taken
// at every unit boundary (every unit tokens) and remembered. A later
// prompt's cache hit is the longest run of whole units whose hash was seen
// before, so only a byte-identical prefix hits, and only in whole units.
// Scopes (the model, and the user when asked) keep caches apart. It is not
// safe for concurrent use: the Server locks around it.
type prefixCache struct {
	seen map[prefixKey]struct{}
}

// prefixKey is the hash of a prompt's first k units.
type prefixKey [sha256.Size]byte

func newPrefixCache() *prefixCache { return &prefixCache{seen: map[prefixKey]struct{}{}} }

// hit returns how many whole units of a prompt's keys were seen before,
// then remembers them all for later requests.
func (c *prefixCache) hit(keys []prefixKey) int {
	units := 0
	for _, key := range keys {
		if _, ok := c.seen[key]; !ok {
			break
		}
		units++
	}
	for _, key := range keys {
		c.seen[key] = struct{}{}
	}
	return units
}

// reset forgets every prefix.
func (c *prefixCache) reset() { clear(c.seen) }

// prefixKeys walks a prompt's token stream and returns its token count and
// the hash at each unit boundary.
func prefixKeys(scope string, msgs []Message, unit int) (tokens int, keys []prefixKey) {
	t := &tokenStream{h: sha256.New(), unit: unit}
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
	return t.n, t.keys
}

// tokenStream hashes tokens one by one and keeps the hash at each unit
// boundary.
type tokenStream struct {
	h    hash.Hash
	unit int
	n    int
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
	t.n++
	if t.n%t.unit == 0 {
		var key prefixKey
		t.h.Sum(key[:0])
		t.keys = append(t.keys, key)
	}
}
