package benches

import (
	"net/http"
	"strings"

	"github.com/mullhq/mull/config"
)

// WithTokens returns a copy of s told whether mull has an admin token
// (admin_token, MULL_ADMIN_TOKEN) and an API token (api_token,
// MULL_API_TOKEN). Without both, s starts no run whose cells DSH executes
// (checkExecutor); New assumes neither.
func (s *Service) WithTokens(admin, api bool) *Service {
	c := *s
	c.admin, c.api = admin, api
	return &c
}

// checkExecutor refuses to start a run of action ("run", "memory") whose
// cells would run DSH (bench.executor = dsh) unless mull has both tokens.
// A DSH cell is an agent with a shell on mull's host, and its DSH reaches
// mull on loopback (its plugin, its model through the proxy). With no
// admin token every loopback caller is mull's admin (/v1/admin/*,
// /riverui/), so the cell could rewrite the harness, read every run,
// change budgets; with no API token every caller may use /v1/*, so the
// cell could write memories that reach the operator's own agents' system
// prompts. (The cell's plugin needs neither: it reads its snapshot with
// its capability.) Every way a run starts (the admin API, the bridge's
// harness_benchmark run, `mull bench run` and `mull bench memory`) comes
// through here.
func (s *Service) checkExecutor(action string) error {
	if s.cfg.Executor != config.BenchExecutorDSH || s.admin && s.api {
		return nil
	}
	var missing []string
	if !s.admin {
		missing = append(missing, "MULL_ADMIN_TOKEN (admin_token)")
	}
	if !s.api {
		missing = append(missing, "MULL_API_TOKEN (api_token)")
	}
	return coded(http.StatusConflict, action+":dsh-needs-tokens",
		"bench.executor = dsh runs each cell as a DSH agent with a shell on mull's host, which reaches mull on loopback; "+
			"with no admin token every loopback caller is mull's admin (/v1/admin/*), and with no API token any caller may write "+
			"memories an agent's system prompt carries, so a cell could act as the operator. "+
			"Set %s for mull serve and for this command, or run with bench.executor = llm", strings.Join(missing, " and "))
}
