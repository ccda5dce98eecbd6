package web

// NoAgentCache makes p's overview read its past days of agent usage on
// every visit, as before it kept them: for benchmarks that compare.
func (p *Panel) NoAgentCache() { p.agents.off = true }
