package engine

import "errors"

var errNoAPI = errors.New("hookledger: the engine runs handlers of package github.com/hookledger/hookledger, which this program does not link")

// Effects are the routes and settings a register function set up.
type Effects struct {
	Routes       Routes
	RouteNames   []string // "source/type", sorted
	SettingNames []string // the settings it read, sorted
}

// HandlerOf adapts h, a hookledger.Handler.
func HandlerOf(h any) (Handler, error) {
	if api == nil {
		return nil, errNoAPI
	}
	return api.Handler(h)
}

// RoutesOf adapts router, a *hookledger.Router.
func RoutesOf(router any) (Routes, error) {
	if api == nil {
		return nil, errNoAPI
	}
	return api.Routes(router)
}

// EffectsOf runs register, a func(*hookledger.Router, *hookledger.Settings)
// error, with settings read through lookup; where says, in an error, where
// a setting is set.
func EffectsOf(register any, lookup func(name string) (string, error), where string) (Effects, error) {
	if api == nil {
		return Effects{}, errNoAPI
	}
	return api.Effects(register, lookup, where)
}

// MustRoutes is RoutesOf for tests and wiring that pass a *hookledger.Router
// they built: it panics on anything else.
func MustRoutes(router any) Routes {
	r, err := RoutesOf(router)
	if err != nil {
		panic(err)
	}
	return r
}
