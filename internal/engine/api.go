package engine

import (
	"context"
	"errors"
	"time"
)

// Event is an event as the engine hands it to a Handler.
type Event struct {
	Source, Tenant, ID, Type string
	Body                     []byte
	Attempt                  int
	ReceivedAt               time.Time
}

// Handler is a handler as the engine runs it: one attempt of ev, whose
// steps and order questions go to run. Package hookledger adapts a user's
// handler to it (HandlerOf).
type Handler interface {
	Run(ctx context.Context, ev Event, run *Run) error
}

// Routes finds the Handler of an event's source and type (nil: no route).
type Routes interface {
	Lookup(source, eventType string) Handler
}

// Effects are the routes and settings a register function set up.
type Effects struct {
	Routes       Routes
	RouteNames   []string // "source/type", sorted
	SettingNames []string // the settings it read, sorted
}

// API is what package hookledger lends the engine: it adapts the user's
// handlers and register functions, so that the engine runs them without
// importing the package that defines them. hookledger installs it at init.
type API interface {
	Handler(h any) (Handler, error)
	Routes(router any) (Routes, error)
	Effects(register any, lookup func(name string) (string, error), where string) (Effects, error)
}

var api API

// Install is called by package hookledger's init.
func Install(a API) { api = a }

var errNoAPI = errors.New("hookledger: the engine runs handlers of package github.com/hookledger/hookledger, which this program does not link")

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
