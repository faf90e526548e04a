package hookledger

// RouteNames lets the package's external tests read a router's routes.
func RouteNames(r *Router) []string { return r.names() }
