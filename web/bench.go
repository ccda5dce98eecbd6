package web

// routesBench mounts the bench pages.
func (p *Panel) routesBench() {}
