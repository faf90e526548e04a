package hookledger

import (
	"context"
	"fmt"

	"github.com/hookledger/hookledger/internal/engine"
)

// The engine runs handlers without importing this package: at init, this
// package lends it the adapters below (engine.Install).
func init() { engine.Install(adapter{}) }

type adapter struct{}

// handler is a Handler as the engine runs it.
type handler struct{ h Handler }

func (a handler) Run(ctx context.Context, ev engine.Event, run *engine.Run) error {
	return a.h.HandleEvent(ctx, &Event{Source: ev.Source, Tenant: ev.Tenant, ID: ev.ID, Type: ev.Type, Body: ev.Body,
		Attempt: ev.Attempt, ReceivedAt: ev.ReceivedAt, run: run})
}

// routes is a Router as the engine looks handlers up.
type routes struct{ r *Router }

func (rs routes) Lookup(source, eventType string) engine.Handler {
	if h := rs.r.Lookup(source, eventType); h != nil {
		return handler{h}
	}
	return nil
}

func (adapter) Handler(h any) (engine.Handler, error) {
	hh, ok := h.(Handler)
	if !ok || hh == nil {
		return nil, fmt.Errorf("hookledger: %T is not a hookledger.Handler", h)
	}
	return handler{hh}, nil
}

func (adapter) Routes(router any) (engine.Routes, error) {
	r, ok := router.(*Router)
	if !ok || r == nil {
		return nil, fmt.Errorf("hookledger: %T is not a *hookledger.Router", router)
	}
	return routes{r}, nil
}

func (adapter) Effects(register any, lookup func(string) (string, error), where string) (engine.Effects, error) {
	reg, ok := register.(func(*Router, *Settings) error)
	if !ok {
		return engine.Effects{}, fmt.Errorf("hookledger: the effects' register function is a %T, want func(*hookledger.Router, *hookledger.Settings) error", register)
	}
	r, s := NewRouter(), newSettings(lookup, where)
	if err := reg(r, s); err != nil {
		return engine.Effects{}, err
	}
	return engine.Effects{Routes: routes{r}, RouteNames: r.names(), SettingNames: s.names()}, nil
}
