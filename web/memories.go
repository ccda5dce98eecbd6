package web

// routesMemories mounts the memories pages.
func (p *Panel) routesMemories() {}
