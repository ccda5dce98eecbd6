package web

import "net/http"

// routesOverview mounts the overview at /.
func (p *Panel) routesOverview() {
	p.get("/{$}", p.overview)
}

type overviewView struct{}

func (p *Panel) overview(w http.ResponseWriter, r *http.Request) error {
	return p.page(w, r, "overview", "overview", "Overview", overviewView{})
}
