package web

// routesAsOf mounts the asof pages.
func (p *Panel) routesAsOf() {}
