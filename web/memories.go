package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// routesMemories mounts the memories pages: the list with its filters and
// the add form, one memory's page with both timelines, and the actions
// (through the memories service, which runs the trust gate).
func (p *Panel) routesMemories() {
	p.get("/memories", p.memoriesList)
	p.get("/memories/{id}", p.memoryPage)
	p.get("/memories/{id}/uses", p.memoryUses)
	p.post("/memories", p.memoryAdd)
	p.post("/memories/{id}/invalidate", p.memoryInvalidate)
	p.post("/memories/{id}/verify", p.memoryVerify)
	p.post("/memories/{id}/move", p.memoryMove)
}

// memoriesPer is a list page's length.
const memoriesPer = 50

// globalLibrary is how a form and a link name the global library (whose
// workspace is ""): never an absolute path, so never a workspace.
const globalLibrary = "(global)"

// libraryParam reads a workspace form value: globalLibrary is "", "" is
// none (every library).
func libraryParam(v string) (ws string, set bool) {
	switch v = strings.TrimSpace(v); v {
	case "":
		return "", false
	case globalLibrary:
		return "", true
	}
	return v, true
}

// libraryValue is libraryParam's inverse, for links and forms.
func libraryValue(ws string) string {
	if ws == "" {
		return globalLibrary
	}
	return ws
}

// memoryFilters is the list's GET form, as read from the query.
type memoryFilters struct {
	Workspace, Kind, Scope, State, Origin, Src, Q string
}

// AddForm is the add form's values, kept when the add is refused.
type AddForm struct {
	Workspace, Kind, Text, Src string
	Importance                 string
	// Error is why the add was refused, shown in place.
	Error string
}

type memoriesView struct {
	Filters   memoryFilters
	Rows      []store.Memory
	Pager     Pager
	Counts    []kindCounts
	States    []string
	Libraries []store.LibraryCount
	Kinds     []memory.Kind
	AddKinds  []memory.Kind
	Origins   []memory.Origin
	Srcs      []memory.Src
	Scopes    []memory.LessonScope
	Add       AddForm
	// Filtered: some filter is set (the empty state differs).
	Filtered bool
}

// kindCounts is one row of the counts table: a kind and its count per
// panel state (store.PanelStates' order), and its total.
type kindCounts struct {
	Kind   string
	States []int
	Total  int
}

// allKinds are the kinds the list's filter offers: the memory kinds and
// the structured lesson kinds.
var allKinds = append(append([]memory.Kind{}, memory.Kinds...), memory.Directive, memory.Failure)

// addKinds are the kinds the add form offers: the memory kinds only (a
// directive or failure needs lesson fields; the lessons page adds those).
var addKinds = memory.Kinds

var allOrigins = []memory.Origin{memory.OriginTool, memory.OriginCommand, memory.OriginRetro, memory.OriginSleep,
	memory.OriginPanel, memory.OriginImport}

var allSrcs = []memory.Src{memory.SrcUser, memory.SrcAgent, memory.SrcWeb, memory.SrcTool, memory.SrcDoc}

// memoryFilter turns the list's query into the store's filter. The text
// search is here and only here: issue 16 replaces the LIKE terms of
// memory.SearchTerms with full-text search.
func memoryFilter(q url.Values) (memoryFilters, store.PanelMemoryFilter, error) {
	f := memoryFilters{Workspace: q.Get("workspace"), Kind: q.Get("kind"), Scope: q.Get("scope"), State: q.Get("state"),
		Origin: q.Get("origin"), Src: q.Get("src"), Q: strings.TrimSpace(q.Get("q"))}
	sf := store.PanelMemoryFilter{Kind: f.Kind, Scope: f.Scope, State: f.State, Origin: f.Origin, Src: f.Src}
	sf.Workspace, sf.ByWorkspace = libraryParam(f.Workspace)
	if f.Q != "" {
		terms, err := memory.SearchTerms(f.Q)
		if err != nil {
			return f, sf, Errorf(http.StatusBadRequest, "search: %v", err)
		}
		sf.Terms = terms
	}
	return f, sf, nil
}

func (p *Panel) memoriesList(w http.ResponseWriter, r *http.Request) error {
	return p.renderMemories(w, r, http.StatusOK, AddForm{Kind: string(memory.Fact)})
}

// renderMemories renders the list; add is the add form's values (and its
// refusal, with status 422).
func (p *Panel) renderMemories(w http.ResponseWriter, r *http.Request, status int, add AddForm) error {
	ctx := r.Context()
	f, sf, err := memoryFilter(r.URL.Query())
	if err != nil {
		return err
	}
	v := memoriesView{Filters: f, States: store.PanelStates, Kinds: allKinds, AddKinds: addKinds, Origins: allOrigins, Srcs: allSrcs,
		Scopes: memory.LessonScopes, Add: add, Pager: pager(r, memoriesPer),
		Filtered: f != (memoryFilters{})}
	sf.Limit, sf.Offset = v.Pager.Limit(), v.Pager.Offset()
	s := p.deps.Store
	if v.Rows, err = s.PanelMemories(ctx, s.DB, sf); err != nil {
		return Errorf(http.StatusBadRequest, "%v", err)
	}
	v.Rows = v.Rows[:v.Pager.Trim(len(v.Rows))]
	counts, err := s.PanelMemoryCounts(ctx, s.DB, sf)
	if err != nil {
		return err
	}
	v.Counts = countTable(counts)
	if v.Libraries, err = s.MemoryLibraries(ctx, s.DB, 500); err != nil {
		return err
	}
	return p.render(w, r, status, "memories", "memories", "Memories", v)
}

// countTable pivots the counts into one row per kind, and a last row of
// totals (Kind "").
func countTable(cs []store.MemoryCount) []kindCounts {
	var rows []kindCounts
	total := kindCounts{States: make([]int, len(store.PanelStates))}
	idx := map[string]int{}
	for _, c := range cs {
		i, ok := idx[c.Kind]
		if !ok {
			i = len(rows)
			idx[c.Kind] = i
			rows = append(rows, kindCounts{Kind: c.Kind, States: make([]int, len(store.PanelStates))})
		}
		for j, st := range store.PanelStates {
			if st == c.State {
				rows[i].States[j] += c.N
				total.States[j] += c.N
			}
		}
		rows[i].Total += c.N
		total.Total += c.N
	}
	if len(rows) == 0 {
		return nil
	}
	return append(rows, total)
}

// memoryAdd writes an operator's memory (origin panel). Text the trust
// gate refuses, or a bad field, is shown in place on the list with the
// form as typed, and nothing is stored.
func (p *Panel) memoryAdd(w http.ResponseWriter, r *http.Request) error {
	if p.deps.Memories == nil {
		return Errorf(http.StatusServiceUnavailable, "the memories service is not configured")
	}
	f := r.PostForm
	add := AddForm{Workspace: f.Get("workspace"), Kind: f.Get("kind"), Text: f.Get("text"), Src: f.Get("src"),
		Importance: strings.TrimSpace(f.Get("importance"))}
	ws, _ := libraryParam(add.Workspace)
	wr := memory.Write{Workspace: ws, Kind: memory.Kind(add.Kind), Text: add.Text, Src: memory.Src(add.Src)}
	if add.Importance != "" {
		n, err := strconv.Atoi(add.Importance)
		if err != nil {
			add.Error = "importance: " + strconv.Quote(add.Importance) + " is not a whole number from 1 to 10"
			return p.renderMemories(w, r, http.StatusUnprocessableEntity, add)
		}
		wr.Importance = n
	}
	out, err := p.deps.Memories.AddFromPanel(r.Context(), wr)
	var refused *memories.RefusedError
	var field *memory.FieldError
	switch {
	case errors.As(err, &refused), errors.As(err, &field):
		add.Error = err.Error()
		return p.renderMemories(w, r, http.StatusUnprocessableEntity, add)
	case err != nil:
		return err
	case out.Duplicate:
		return p.done(w, r, "/memories", "memory "+strconv.FormatInt(out.Memory.ID, 10)+" already says this: it got one more use")
	}
	setFlash(w, r, "memory "+strconv.FormatInt(out.Memory.ID, 10)+" added")
	http.Redirect(w, r, "/memories/"+strconv.FormatInt(out.Memory.ID, 10), http.StatusSeeOther)
	return nil
}
