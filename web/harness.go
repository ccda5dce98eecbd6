package web

// routesHarness mounts the harness pages.
func (p *Panel) routesHarness() {}
