package config

// Proposals says who decides the improvements the retros propose. The seed's
// admin rule: a person decides, and the agent that proposed one cannot
// accept it on its own word unless the operator says it may.
type Proposals struct {
	// AgentMayDecide lets the API token (the agent's memory_proposal tool
	// through the bridge: POST /v1/proposals/{id}/accept|reject) decide a
	// proposal. Defaults to false: a person decides with `mull proposals
	// accept|reject ID` or the panel's /proposals (the admin routes).
	// Env: MULL_PROPOSALS_AGENT_MAY_DECIDE.
	AgentMayDecide bool `toml:"agent_may_decide"`
}
