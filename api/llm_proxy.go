package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/mullhq/mull/benchcap"
	"github.com/mullhq/mull/llm"
	"github.com/riverqueue/river/rivertype"
)

// maxProxyBody bounds a relayed request: an agent's whole conversation.
const maxProxyBody = 32 << 20

// forwardedHeaders are the request headers the proxy passes on to
// DeepSeek (DSH's session and user ids); never the Authorization, which
// carries the capability and is replaced with mull's key.
var forwardedHeaders = []string{"Accept", "X-Deepseek-Harness-Session-Id", "X-Deepseek-Harness-User-Id", "X-Deepseek-Harness-Compact"}

// routesLLMProxy mounts the DeepSeek-compatible proxy a benchmark cell's
// DSH reaches its model through (bench.executor = dsh), so the cell's
// model calls are mull's like any job's: authorized by the cell's
// capability, charged to the run's budget keys before they go out,
// recorded as calls of the cell's job (the run's tokens and cost count
// them), refused while the LLM queue is paused, and sent with mull's key,
// which the cell never sees.
func (s *Server) routesLLMProxy() {
	s.mux.HandleFunc("POST /v1/llm/proxy/chat/completions", s.llmProxy) // benchcap.ProxyPath
}

// llmProxy is POST /v1/llm/proxy/chat/completions: OpenAI's chat
// completions wire format, answered as DeepSeek answers (SSE passed
// through as it arrives when the request streams). Its own refusals are
// in DeepSeek's error shape, which DSH shows: 401 for a capability that
// is missing, altered or expired, or whose cell's job attempt is no
// longer running; 402 while the LLM queue is paused or
// the run's budget has no room (DSH does not retry a 402, and waiting
// inside a cell's timeout would not help); 400 for a body that is no chat
// request or one whose model (the capability's, which the body's is
// rewritten to) has no price; 503 when mull cannot read whether the
// queue is paused; 502 when DeepSeek could not be reached.
func (s *Server) llmProxy(w http.ResponseWriter, r *http.Request) {
	c, ok, err := s.cellClaims(r.Context(), r)
	switch {
	case !ok:
		proxyError(w, http.StatusUnauthorized, "mull_capability", "mull's LLM proxy needs Authorization: Bearer <a benchmark cell's capability> (DSH sends it as DEEPSEEK_API_KEY)")
		return
	case err != nil && capabilityRefused(err):
		proxyError(w, http.StatusUnauthorized, "mull_capability", err.Error())
		return
	case err != nil:
		proxyError(w, http.StatusInternalServerError, "mull_error", err.Error())
		return
	case c.Model == "":
		proxyError(w, http.StatusUnauthorized, "mull_capability", "the bench capability names no model (minted by an older mull); rerun the cell")
		return
	case s.deps.LLM == nil:
		proxyError(w, http.StatusServiceUnavailable, "mull_error", "the LLM proxy is not configured on this server")
		return
	}
	paused, err := s.queuePaused(r.Context(), c.Kind)
	if err != nil {
		s.deps.Logger.Error("LLM proxy: read the cell's queue", "kind", c.Kind, "run", c.Run, "job_id", c.Job, "error", err)
		proxyError(w, http.StatusServiceUnavailable, "mull_error", "mull could not tell whether its LLM queue is paused ("+err.Error()+"); nothing was sent")
		return
	}
	if paused != "" {
		proxyError(w, http.StatusPaymentRequired, "mull_paused", paused)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProxyBody))
	if err != nil {
		proxyError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", fmt.Sprintf("read the body (at most %d bytes): %v", maxProxyBody, err))
		return
	}
	call := llm.RelayCall{Kind: c.Kind, JobID: c.Job, Workspace: c.Workspace, Body: body, Model: c.Model,
		MaxTokens: s.deps.Config.Bench.PhaseMaxTokens, Header: http.Header{}}
	for _, k := range forwardedHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			call.Header[k] = v
		}
	}
	rel, err := s.deps.LLM.Relay(r.Context(), call)
	if err != nil {
		s.proxyRefused(w, c, err)
		return
	}
	if rel.Failure != nil && rel.Failure.Class == llm.Pause {
		s.pauseFor(r.Context(), c, rel.Failure)
	}
	pass(w, rel)
}

// pass copies DeepSeek's answer to the client, flushing each read so SSE
// chunks arrive as they came, and closes it (which settles the call).
func pass(w http.ResponseWriter, rel *llm.Relayed) {
	defer rel.Body.Close()
	for _, k := range []string{"Content-Type", "Cache-Control", "Retry-After", "X-Request-Id"} {
		if v := rel.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(rel.Status)
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := rel.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return // the client left; Close records the call incomplete
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// queuePaused says why the queue of the cell's kind is paused, "" when it
// is not (or does not exist yet): a paused LLM queue holds every LLM job,
// and the cell's DSH is one more caller. An error is a queue that could
// not be read, which is no sign it is running.
func (s *Server) queuePaused(ctx context.Context, kind string) (string, error) {
	if s.deps.Client == nil {
		return "", nil
	}
	queue := s.cellQueue(kind)
	q, err := s.deps.Client.QueueGet(ctx, queue)
	if errors.Is(err, rivertype.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read queue %q: %w", queue, err)
	}
	if q.PausedAt == nil {
		return "", nil
	}
	why := cmp.Or(llm.PausedReason(q), "paused by an operator")
	return "mull's LLM queue " + strconv.Quote(queue) + " is paused (" + why + "); nothing was sent. Resume it with `mull queues resume " + queue + "`", nil
}

// cellQueue is the queue the cell's kind runs on (llm unless [jobs.*]
// moved it).
func (s *Server) cellQueue(kind string) string {
	if s.deps.Registry != nil {
		if spec, ok := s.deps.Registry.Spec(kind); ok && spec.Queue != "" {
			return spec.Queue
		}
	}
	return "llm"
}

// proxyRefused answers a call Relay did not send.
func (s *Server) proxyRefused(w http.ResponseWriter, c benchcap.Claims, err error) {
	var e *llm.Error
	errors.As(err, &e)
	switch {
	case e == nil:
		proxyError(w, http.StatusInternalServerError, "mull_error", err.Error())
	case e.Class == llm.Budget || e.Reason == "budget_too_small":
		if !e.ResetAt.IsZero() {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(time.Until(e.ResetAt), time.Second)/time.Second)))
		}
		proxyError(w, http.StatusPaymentRequired, "mull_budget_exhausted", "mull's daily LLM budget has no room for this call of run "+c.Run+": "+err.Error())
	case e.Class == llm.Pause:
		proxyError(w, http.StatusPaymentRequired, "mull_paused", err.Error())
	case e.Class == llm.Permanent:
		proxyError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
	default:
		proxyError(w, http.StatusBadGateway, "mull_upstream", "mull could not reach DeepSeek: "+err.Error())
	}
}

// pauseFor pauses the cell's queue on DeepSeek's 402, as a job meeting it
// does, so the LLM jobs wait for an operator instead of meeting it too.
func (s *Server) pauseFor(ctx context.Context, c benchcap.Claims, cause *llm.Error) {
	if s.deps.Client == nil {
		return
	}
	queue := s.cellQueue(c.Kind)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := llm.PauseQueue(pctx, s.deps.Client, queue, llm.BalanceReason); err != nil {
		s.deps.Logger.Error("pause queue", "queue", queue, "reason", llm.BalanceReason, "error", err)
		return
	}
	s.deps.Logger.Error("DeepSeek balance exhausted (HTTP 402) on a benchmark cell's call: queue paused; top up, then run `mull queues resume "+queue+"`",
		"queue", queue, "run", c.Run, "job_id", c.Job, "error", cause)
}

// proxyError answers in DeepSeek's error shape ({"error": {"message",
// "type", "code"}}), whose message DSH shows.
func proxyError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]map[string]string{"error": {"message": msg, "type": code, "code": code}})
}
