package api

import (
	"bytes"
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/ingest"
	"github.com/mullhq/mull/store"
)

// routesIngest mounts POST /v1/events and the session routes, the API DSH's
// bridge plugin uses, behind the API token.
func (s *Server) routesIngest() {
	s.mux.Handle("POST /v1/events", s.apiAuth(s.postEvents))
	s.mux.Handle("GET /v1/sessions", s.apiAuth(s.listSessions))
	s.mux.Handle("GET /v1/sessions/{id}", s.apiAuth(s.showSession))
}

// apiAuth guards a DSH-facing handler with the API token as a bearer token
// when one is configured; without one the routes are open (mull listens on
// loopback by default). It is not the admin guard: the two tokens differ.
func (s *Server) apiAuth(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := s.deps.Config.APIToken; tok != "" {
			scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(tok)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mull"`)
				writeError(w, http.StatusUnauthorized, "this route needs Authorization: Bearer <MULL_API_TOKEN>")
				return
			}
		}
		h(w, r)
	})
}

// eventsRequest is POST /v1/events's body. Events stay raw until each is
// decoded on its own, so a decoding error can name its index.
type eventsRequest struct {
	Events []json.RawMessage `json:"events"`
}

// fieldErrorBody is a 400 that points into the batch. Index is absent when
// the problem is the batch itself (empty, too long).
type fieldErrorBody struct {
	Error string `json:"error"`
	Index *int   `json:"index,omitempty"`
	Field string `json:"field"`
}

func (s *Server) postEvents(w http.ResponseWriter, r *http.Request) {
	if s.deps.Ingest == nil {
		writeError(w, http.StatusServiceUnavailable, "ingest is not configured on this server")
		return
	}
	limit := s.deps.Config.Ingest.MaxBody
	if limit <= 0 {
		limit = config.Default().Ingest.MaxBody
	}
	tooBig := fmt.Sprintf("body over %d bytes (ingest.max_body); send the events in smaller batches", limit)
	if r.ContentLength > limit {
		writeError(w, http.StatusRequestEntityTooLarge, tooBig)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		writeError(w, http.StatusRequestEntityTooLarge, tooBig)
		return
	case err != nil:
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	batch, err := decodeBatch(body)
	var res ingest.Result
	if err == nil {
		res, err = s.deps.Ingest.IngestBatch(r.Context(), batch, store.SourcePush)
	}
	s.ops.ingested(res, err)
	if err != nil {
		writeIngestError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"stored": res.Stored, "duplicates": res.Duplicates})
}

// writeIngestError answers a bad event with 400 naming its index and field,
// and anything else with 500.
func writeIngestError(w http.ResponseWriter, err error) {
	var fe *events.FieldError
	if !errors.As(err, &fe) {
		writeError(w, http.StatusInternalServerError, "store events: "+err.Error())
		return
	}
	out := fieldErrorBody{Error: fe.Field + ": " + fe.Problem, Field: fe.Field}
	if fe.Index >= 0 {
		out.Error, out.Index = fe.Error(), &fe.Index
	}
	writeJSON(w, http.StatusBadRequest, out)
}

// decodeBatch reads {"events":[…]}, refusing unknown fields at the top and
// in each event (payloads are checked by events.Validate). Its errors are
// *events.FieldError.
func decodeBatch(body []byte) ([]events.Event, error) {
	if path, problem := events.CheckJSON(body, 0); problem != "" {
		return nil, batchFieldError(path, problem)
	}
	var req eventsRequest
	if err := strictDecode(body, &req); err != nil {
		return nil, &events.FieldError{Index: -1, Field: "body", Problem: "invalid JSON: " + err.Error()}
	}
	if req.Events == nil {
		return nil, &events.FieldError{Index: -1, Field: "events", Problem: `required: send {"events": [...]}`}
	}
	batch := make([]events.Event, len(req.Events))
	for i, raw := range req.Events {
		if err := strictDecode(raw, &batch[i]); err != nil {
			field, problem := jsonField(err)
			return nil, &events.FieldError{Index: i, Field: field, Problem: problem}
		}
	}
	return batch, nil
}

// batchFieldError points a problem at path ("events[3].payload.text")
// into the batch: event 3, field payload.text.
func batchFieldError(path, problem string) *events.FieldError {
	rest, ok := strings.CutPrefix(path, "events[")
	i, field, ok2 := strings.Cut(rest, "]")
	n, err := strconv.Atoi(i)
	if !ok || !ok2 || err != nil {
		return &events.FieldError{Index: -1, Field: cmp.Or(path, "body"), Problem: problem}
	}
	return &events.FieldError{Index: n, Field: cmp.Or(strings.TrimPrefix(field, "."), "event"), Problem: problem}
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// jsonField names the event field a decoding error is about.
func jsonField(err error) (field, problem string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field, fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return strings.Trim(name, `"`), "unknown field"
	}
	if strings.Contains(msg, "parsing time") {
		return "time", "want an RFC 3339 time: " + msg
	}
	return "event", msg
}
