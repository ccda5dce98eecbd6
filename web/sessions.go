package web

// routesSessions mounts the sessions pages.
func (p *Panel) routesSessions() {}
