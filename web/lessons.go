package web

// routesLessons mounts the lessons pages.
func (p *Panel) routesLessons() {}
