package benches

import (
	"net/http"

	"github.com/mullhq/mull/config"
)

// WithAdminToken returns a copy of s told whether mull has an admin token
// (admin_token, MULL_ADMIN_TOKEN). Without one, s starts no run whose
// cells DSH executes (checkExecutor); New assumes none.
func (s *Service) WithAdminToken(configured bool) *Service {
	c := *s
	c.admin = configured
	return &c
}

// checkExecutor refuses to start a run of action ("run", "memory") whose
// cells would run DSH (bench.executor = dsh) when mull has no admin token.
// A DSH cell is an agent with a shell on mull's host, and its DSH reaches
// mull on loopback (its plugin, its model through the proxy); with no
// admin token every loopback caller is mull's admin (/v1/admin/*,
// /riverui/), so the cell could rewrite the harness, read every run,
// change budgets. Every way a run starts (the admin API, the bridge's
// harness_benchmark run, `mull bench run` and `mull bench memory`) comes
// through here.
func (s *Service) checkExecutor(action string) error {
	if s.cfg.Executor != config.BenchExecutorDSH || s.admin {
		return nil
	}
	return coded(http.StatusConflict, action+":dsh-needs-admin-token",
		"bench.executor = dsh runs each cell as a DSH agent with a shell on mull's host, which reaches mull on loopback; "+
			"with no admin token every loopback caller is mull's admin (/v1/admin/*), so a cell could act as the operator. "+
			"Set MULL_ADMIN_TOKEN (admin_token) for mull serve and for this command, or run with bench.executor = llm")
}
