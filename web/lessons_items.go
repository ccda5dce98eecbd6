package web

import (
	"net/http"
	"slices"

	"github.com/mullhq/mull/store"
)

// itemListRow is a reflection item with its task and its effect.
type itemListRow struct {
	store.ReflectionItemRow
	Effect itemEffect
}

func itemListRows(items []store.ReflectionItemRow) []itemListRow {
	out := make([]itemListRow, len(items))
	for i, it := range items {
		out[i] = itemListRow{ReflectionItemRow: it, Effect: effectOf(it.ReflectionItem)}
	}
	return out
}

type itemsView struct {
	// Page is "items": lesson.html shows this list (it shares the rows
	// with a lesson's page).
	Page                              string
	Relation, Check, State, Workspace string
	Relations                         []string
	Items                             []itemListRow
	Pager                             Pager
}

// lessonItems lists what the reflections proposed, newest first:
// ?relation=new|repeat|revise|none, ?state=refused|accepted, ?check=C (the
// check that refused it), ?workspace=W.
func (p *Panel) lessonItems(w http.ResponseWriter, r *http.Request) error {
	if err := p.needStore(); err != nil {
		return err
	}
	q := r.URL.Query()
	v := itemsView{Page: "items", Relation: q.Get("relation"), Check: q.Get("check"), State: q.Get("state"), Workspace: q.Get("workspace"),
		Relations: []string{store.RelationNew, store.RelationRepeat, store.RelationRevise, store.RelationNone}, Pager: pager(r, 50)}
	if v.Relation != "" && !slices.Contains(v.Relations, v.Relation) {
		return Errorf(http.StatusBadRequest, "relation %q is not one of new, repeat, revise, none", v.Relation)
	}
	if v.State != "" && v.State != "refused" && v.State != "accepted" {
		return Errorf(http.StatusBadRequest, "state %q is not refused or accepted", v.State)
	}
	items, err := p.deps.Store.PanelReflectionItems(r.Context(), store.ItemPage{Relation: v.Relation, Check: v.Check,
		Refused: v.State == "refused", Accepted: v.State == "accepted", Workspace: v.Workspace,
		Limit: v.Pager.Limit(), Offset: v.Pager.Offset()})
	if err != nil {
		return err
	}
	v.Items = itemListRows(items[:v.Pager.Trim(len(items))])
	return p.page(w, r, "lesson", "lessons", "Reflected lessons", v)
}
