package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/mullhq/mull/web"
)

// The panel (package web) is served at / for every path the API does not
// own (panelPath; ServeHTTP picks), so the API's mux keeps answering its
// own unknown paths with 404 and wrong methods with 405. Who may do what there is this package's admin rule: with an admin
// token, a browser logged in at /login reads and acts, and one without the
// cookie is sent to log in; with no token, a browser on loopback reads and
// acts (as the admin API answers loopback), anywhere else nothing.
func (s *Server) mountPanel() error {
	p, err := web.New(web.Deps{
		Store: s.deps.Store, Client: s.deps.Client, Registry: s.deps.Registry, Budget: s.deps.Budget,
		Memories: s.deps.Memories, Tasks: s.deps.Tasks, Negledger: s.deps.Negledger, Harness: s.deps.Harness,
		Bench: s.deps.Bench, Config: s.deps.Config, Logger: s.deps.Logger.With("component", "panel"),
		Access: s.panelAccess, Now: s.deps.Now,
		Health: s.panelHealth,
	})
	if err != nil {
		return err
	}
	s.panel = p
	return nil
}

func (s *Server) panelAccess(r *http.Request) web.Access {
	switch {
	case s.deps.AdminToken == "" && isLoopback(r.RemoteAddr):
		return web.Access{Read: true, Act: true}
	case s.deps.AdminToken == "":
		return web.Access{Why: "no admin token is configured, so the panel answers only on loopback; set MULL_ADMIN_TOKEN"}
	case s.isAdmin(r):
		return web.Access{Read: true, Act: true}
	}
	return web.Access{Why: "log in with the admin token (MULL_ADMIN_TOKEN)"}
}

// panelPath reports a path the panel serves: everything but the API's own
// prefixes. Its pages show admin data, so cross-origin reads are refused
// there too (strictOrigin), and its forms post HTML form bodies.
func panelPath(p string) bool {
	switch {
	case strings.HasPrefix(p, "/v1/"), p == "/riverui", strings.HasPrefix(p, "/riverui/"),
		p == "/healthz", p == "/metrics", p == loginPath, p == logoutPath:
		return false
	}
	return true
}

func (s *Server) panelHealth(ctx context.Context) web.Health {
	h, _ := s.health(ctx)
	return web.Health{Status: h.Status, Reason: h.Reason, Queues: h.Queues, LLM: h.LLM, Checks: []web.Check{
		{Name: "database", OK: h.Database.OK, Detail: h.Database.Detail},
		{Name: "migrations", OK: h.Migrations.OK, Detail: h.Migrations.Detail},
		{Name: "workers", OK: h.Workers.OK, Detail: h.Workers.Detail},
		{Name: "heartbeats", OK: h.Heartbeats.OK, Detail: h.Heartbeats.Detail},
	}}
}
