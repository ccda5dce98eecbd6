package web

// routesDeadLetters mounts the dlq pages.
func (p *Panel) routesDeadLetters() {}
