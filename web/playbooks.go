package web

// routesPlaybooks mounts the playbooks pages.
func (p *Panel) routesPlaybooks() {}
