// Package fakeds is a fake DeepSeek: an http.Handler that answers
// POST /chat/completions and /v1/chat/completions the way DeepSeek does, so
// mull's tests and `mull serve --fake-llm` run offline.
//
// It answers non-streaming and SSE streaming requests, in JSON mode or not,
// with usage whose cache split comes from an emulated prefix cache (see
// PromptTokens and prefixCache), writes keep-alive lines while it holds a
// request, and fails on demand as a Script says. A user message with a
// call marker ("[call:NAME {json args}]", see CallMarker) in a request that
// offers tools gets a tool call, so an agent can be made to call a tool. It
// records every request so tests can check what a client sent.
package fakeds

import (
	"cmp"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// APIKey, when set, must come as "Authorization: Bearer KEY"; other
	// requests get DeepSeek's 401. Defaults to accepting any key or none.
	APIKey string
	// Script decides answers and faults. Defaults to none: the default
	// responder answers everything. New panics on an invalid script; check
	// it first with Script.Validate (LoadScript and ParseScript do).
	Script *Script
	// Models, when set, are the only model names accepted; others get
	// DeepSeek's 400 "Model Not Exist". Defaults to accepting any name.
	Models []string
	// CacheUnit is the prefix cache's storage unit in tokens: a hit covers
	// whole units only. Defaults to 64.
	CacheUnit int
	// CacheInterval is how often, in tokens, the prefix cache persists a
	// prefix along a request besides its ends and the prefixes it shares
	// with earlier ones (see prefixCache). DeepSeek gives no number; it is
	// rounded down to whole CacheUnits, and a negative value turns interval
	// units off. Defaults to 1024.
	CacheInterval int
	// CachePerUser keeps a separate prefix cache per user_id, as DeepSeek
	// says user_id does. Defaults to false: one cache per model.
	CachePerUser bool
	// KeepAliveEvery is the time between keep-alive lines while a request
	// is held (the hang and slow faults). Defaults to 1s.
	KeepAliveEvery time.Duration
	// Responders add or replace default replies by mull prompt type.
	Responders map[string]Responder
	// Now stamps responses and records. Defaults to time.Now.
	Now func() time.Time
	// Logger gets one line per request. Defaults to discarding.
	Logger *slog.Logger
}

// WithDefaults returns the options with every zero field defaulted.
func (o Options) WithDefaults() Options {
	o.CacheUnit = cmp.Or(o.CacheUnit, 64)
	o.CacheInterval = cmp.Or(o.CacheInterval, 1024)
	o.KeepAliveEvery = cmp.Or(o.KeepAliveEvery, time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Server is the fake DeepSeek. It is safe for concurrent use.
type Server struct {
	opts       Options
	responders map[string]Responder
	done       chan struct{}
	closeOnce  sync.Once

	mu      sync.Mutex
	script  *Script
	used    []int // requests each rule has answered, for Times
	records []*Recorded
	cache   *prefixCache
	seq     int
}

// Recorded is one request the fake received and what it answered.
type Recorded struct {
	Time   time.Time
	Method string
	Path   string
	Header http.Header
	// Body is the request body as sent (raw JSON when it was JSON).
	Body json.RawMessage

	// The parsed body; zero when the body did not parse.
	Model    string
	Messages []Message
	// ResponseFormat is response_format.type ("json_object", "text"), or ""
	// when absent.
	ResponseFormat string
	// Thinking is thinking.type ("enabled", "disabled"), or "" when absent.
	Thinking        string
	ReasoningEffort string
	UserID          string
	// MaxTokens is max_tokens, or max_completion_tokens when only that came.
	MaxTokens int
	Stream    bool
	// Kind is the job kind from the X-Mull-Job-Kind header, else from a
	// user_id of the form "mull:<kind>:<job id>".
	Kind string

	// What the fake did: the script rule that matched (-1: none), its
	// fault, the HTTP status, the completion id and the usage returned
	// (nil when no answer was sent).
	Rule   int
	Fault  Fault
	Status int
	ID     string
	Usage  *Usage
}

// New returns a fake DeepSeek.
func New(opts Options) *Server {
	opts = opts.WithDefaults()
	s := &Server{
		opts:       opts,
		responders: maps.Clone(defaultResponders),
		done:       make(chan struct{}),
		cache:      newPrefixCache(),
	}
	maps.Copy(s.responders, opts.Responders)
	if err := s.SetScript(opts.Script); err != nil {
		panic("fakeds: invalid script: " + err.Error())
	}
	return s
}

// SetScript replaces the script (nil: none) and restarts every rule's Times
// count. It rejects an invalid script and keeps the old one.
func (s *Server) SetScript(sc *Script) error {
	if sc != nil {
		if err := sc.Validate(); err != nil {
			return err
		}
		sc = &Script{Rules: slices.Clone(sc.Rules)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = sc
	s.used = nil
	if sc != nil {
		s.used = make([]int, len(sc.Rules))
	}
	return nil
}

// Requests returns a copy of every request recorded so far, oldest first.
// A request still being answered shows what is known so far.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.records))
	for i, r := range s.records {
		out[i] = *r
		out[i].Header = r.Header.Clone()
		out[i].Messages = slices.Clone(r.Messages)
		out[i].Body = slices.Clone(r.Body)
		if r.Usage != nil {
			u := *r.Usage
			if d := u.CompletionTokensDetails; d != nil {
				u.CompletionTokensDetails = &CompletionTokensDetails{ReasoningTokens: d.ReasoningTokens}
			}
			out[i].Usage = &u
		}
	}
	return out
}

// Reset forgets the recorded requests, the prefix cache and the rules'
// Times counts; the script stays.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = nil
	s.cache.reset()
	clear(s.used)
}

// Close releases every held request (hang, slow) and makes later ones end
// at once, so an http.Server can shut down. It does not stop other answers.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// edit changes a record under the lock.
func (s *Server) edit(rec *Recorded, f func(r *Recorded)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(rec)
}

// begin records a request as it arrives.
func (s *Server) begin(r *http.Request, body []byte) *Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	rec := &Recorded{
		Time: s.opts.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body,
		Rule: -1, ID: "fake-" + strconv.Itoa(s.seq),
	}
	s.records = append(s.records, rec)
	return rec
}
