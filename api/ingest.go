package api

// routesIngest mounts POST /v1/events and the session routes.
func (s *Server) routesIngest() {}
