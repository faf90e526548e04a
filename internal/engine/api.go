package engine

import (
	"context"
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
