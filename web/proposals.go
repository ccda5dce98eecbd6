package web

// routesProposals mounts the proposals pages.
func (p *Panel) routesProposals() {}
