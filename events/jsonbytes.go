package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// CheckJSON walks a JSON document and reports the first string, key or
// value, that no store keeps faithfully, with its path ("events[3].workspace")
// and the problem; "" when there is none. encoding/json decodes such
// strings without a word (invalid UTF-8 and lone surrogate escapes such as
// \ud800 become U+FFFD, \u0000 becomes NUL), so this reads the raw bytes of
// each string. A lone surrogate is refused rather than replaced: what was
// sent is not what would be stored. Syntax errors are left to the decoder
// that follows, which words them better. maxString > 0 caps every string's
// decoded length in bytes.
func CheckJSON(raw []byte, maxString int) (path, problem string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	w := jsonWalk{}
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil { // io.EOF, or a syntax error the caller's decoder words
			return "", ""
		}
		seg := raw[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		s, isString := tok.(string)
		if d, ok := tok.(json.Delim); ok {
			w.delim(d)
			continue
		}
		if !isString {
			w.begin()
			w.end()
			continue
		}
		if w.atKey() {
			w.key(s)
		} else {
			w.begin()
		}
		if problem := rawStringProblem(seg, s); problem != "" {
			return w.path(), problem
		}
		if maxString > 0 && len(s) > maxString {
			return w.path(), "longer than " + strconv.Itoa(maxString) + " bytes"
		}
		if !w.inKey() {
			w.end()
		}
		w.keyDone()
	}
}

// rawStringProblem checks one string token: seg is its raw bytes (with the
// separators before it, which are plain ASCII), s its decoded value.
func rawStringProblem(seg []byte, s string) string {
	switch {
	case !utf8.Valid(seg):
		return "not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return "contains a NUL character (U+0000)"
	}
	if esc := loneSurrogate(seg); esc != "" {
		return "holds the lone surrogate escape \\u" + esc + ", which is no character; send the character itself or a whole UTF-16 pair"
	}
	return ""
}

// loneSurrogate returns the hex digits of the first \u escape in seg that is
// half of a UTF-16 pair without its other half, or "".
func loneSurrogate(seg []byte) string {
	pendingHigh := ""
	for i := 0; i < len(seg); i++ {
		if seg[i] != '\\' || i+1 >= len(seg) {
			if pendingHigh != "" {
				return pendingHigh
			}
			continue
		}
		if seg[i+1] != 'u' || i+6 > len(seg) {
			if pendingHigh != "" {
				return pendingHigh
			}
			i++ // an escaped character such as \\ or \"
			continue
		}
		hex := string(seg[i+2 : i+6])
		n, err := strconv.ParseUint(hex, 16, 16)
		i += 5
		switch {
		case err != nil:
			continue // the decoder refuses it
		case n >= 0xD800 && n < 0xDC00:
			if pendingHigh != "" {
				return pendingHigh
			}
			pendingHigh = hex
		case n >= 0xDC00 && n < 0xE000:
			if pendingHigh == "" {
				return hex
			}
			pendingHigh = ""
		default:
			if pendingHigh != "" {
				return pendingHigh
			}
		}
	}
	return pendingHigh
}

// jsonWalk tracks where in a document a token is.
type jsonWalk struct {
	stack []jsonFrame
}

type jsonFrame struct {
	array     bool
	index     int
	key       string
	expectKey bool
	readKey   bool // the last token was this object's key
}

func (w *jsonWalk) top() *jsonFrame {
	if len(w.stack) == 0 {
		return nil
	}
	return &w.stack[len(w.stack)-1]
}

func (w *jsonWalk) delim(d json.Delim) {
	switch d {
	case '{', '[':
		w.begin()
		w.keyDone()
		w.stack = append(w.stack, jsonFrame{array: d == '[', index: -1, expectKey: d == '{'})
	default:
		w.stack = w.stack[:len(w.stack)-1]
		w.end()
	}
}

// begin starts a value: in an array, it is the next element.
func (w *jsonWalk) begin() {
	if f := w.top(); f != nil && f.array {
		f.index++
	}
}

// end finishes a value: in an object, a key comes next.
func (w *jsonWalk) end() {
	if f := w.top(); f != nil && !f.array {
		f.expectKey = true
	}
}

func (w *jsonWalk) atKey() bool {
	f := w.top()
	return f != nil && !f.array && f.expectKey
}

func (w *jsonWalk) key(k string) {
	f := w.top()
	f.key, f.expectKey, f.readKey = k, false, true
}

func (w *jsonWalk) inKey() bool {
	f := w.top()
	return f != nil && f.readKey
}

func (w *jsonWalk) keyDone() {
	if f := w.top(); f != nil {
		f.readKey = false
	}
}

func (w *jsonWalk) path() string {
	var b strings.Builder
	for _, f := range w.stack {
		switch {
		case f.array && f.index >= 0:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		case !f.array && f.key != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
	}
	return b.String()
}
