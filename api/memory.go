package api

// routesMemory mounts the digest, notices and memory tool routes.
func (s *Server) routesMemory() {}
