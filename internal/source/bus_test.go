package source

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func busRegistry(t *testing.T, cfg string) *Registry {
	t.Helper()
	parsed, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegistry(parsed, &Secrets{})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// One Stripe source takes signed deliveries and its partner event source's
// events; the tenants' accounts say whose each bus event is.
func TestBusSourceMapsAccountsToTenants(t *testing.T) {
	t.Parallel()
	reg := busRegistry(t, `{
	  "stripe": {"provider": "stripe", "bus_sources": ["aws.partner/stripe.com/ed_123"],
	    "tenants": {"acme": {"secrets": ["literal:whsec_a"], "accounts": ["acct_1A"]},
	                "platform": {"accounts": ["*"]},
	                "globex": {"secrets": ["literal:whsec_g"]}}},
	  "orders": {"provider": "eventbridge", "bus_sources": ["com.example.orders*"], "key_path": "order.id",
	    "tenants": {"shop": {"accounts": ["*"]}}}
	}`)
	if !reg.HasBus() {
		t.Fatal("HasBus = false")
	}
	b, err := reg.Bus("aws.partner/stripe.com/ed_123", 7*24*time.Hour)
	if err != nil || b.Name != "stripe" || b.Provider != "stripe" {
		t.Fatalf("%+v %v", b, err)
	}
	for account, want := range map[string]string{"acct_1A": "acme", "": "platform", "acct_other": "platform"} {
		if got, ok := b.Tenant(account); !ok || got != want {
			t.Errorf("Tenant(%q) = %q %v, want %q", account, got, ok, want)
		}
	}
	if ev, err := b.Keys().Unsigned([]byte(`{"id":"evt_1","type":"invoice.paid"}`), "eb-id", "detail-type"); err != nil || ev.ID != "evt_1" || ev.Type != "invoice.paid" {
		t.Errorf("a stripe bus source keys on the detail's id and type: %+v %v", ev, err)
	}
	o, err := reg.Bus("com.example.orders.eu", 0)
	if err != nil || o.Name != "orders" || o.Retention < BusHorizon.Duration {
		t.Fatalf("%+v %v", o, err)
	}
	if ev, err := o.Keys().Unsigned([]byte(`{"order":{"id":"o-1"}}`), "eb-id", "OrderPlaced"); err != nil || ev.ID != "o-1" || ev.Type != "OrderPlaced" {
		t.Errorf("an eventbridge source with key_path keys on it and takes the detail-type: %+v %v", ev, err)
	}
	if _, err := o.Keys().Unsigned([]byte(`{"order":{}}`), "eb-id", "OrderPlaced"); err == nil {
		t.Error("a detail without its key_path was keyed")
	}
	if _, err := reg.Bus("com.example.invoices", 0); !errors.Is(err, ErrNoBusSource) {
		t.Errorf("an EventBridge source no source lists: %v", err)
	}
	// The HTTP door: a tenant without secrets, and a bus-only source, are
	// unknown there (404), never a 503 for a secret that cannot exist.
	if _, _, err := reg.Verifier("stripe", "platform"); !errors.Is(err, ErrUnknownTenant) {
		t.Errorf("bus-only tenant over HTTP: %v", err)
	}
	if _, _, err := reg.Verifier("orders", "shop"); !errors.Is(err, ErrUnknownSource) {
		t.Errorf("eventbridge source over HTTP: %v", err)
	}
	if _, refs, err := reg.Verifier("stripe", "acme"); err != nil || len(refs) != 1 {
		t.Errorf("the HTTP door of a tenant with both: %v %v", refs, err)
	}
}

// A tenant's signed deliveries share event ids only with Stripe's partner
// event source; another bus source's Stripe-shaped events go to a tenant
// without an HTTP door, so they cannot take a signed event's id.
func TestBusSharesSignedKeysOnlyWithStripe(t *testing.T) {
	t.Parallel()
	reg := busRegistry(t, `{"stripe": {"provider": "stripe", "bus_sources": ["aws.partner/stripe.com/*"],
	    "tenants": {"acme": {"secrets": ["literal:whsec_a"], "accounts": ["*"]}}},
	  "relay": {"provider": "stripe", "bus_sources": ["com.example.stripe-relay"],
	    "tenants": {"acme": {"secrets": ["literal:whsec_a"]}, "relayed": {"accounts": ["*"]}}}}`)
	b, err := reg.Bus("com.example.stripe-relay", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tn, _ := b.Tenant("acct_1A"); tn != "relayed" {
		t.Errorf("a relayed event went to tenant %q", tn)
	}
}

// Without an account map, a Stripe bus event is for no tenant: parked by
// the bus door, not given to someone.
func TestBusTenantWithoutCatchAll(t *testing.T) {
	t.Parallel()
	reg := busRegistry(t, `{"stripe": {"provider": "stripe", "bus_sources": ["aws.partner/stripe.com/*"],
	  "tenants": {"acme": {"accounts": ["acct_1A"]}}}}`)
	b, err := reg.Bus("aws.partner/stripe.com/ed_9", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Tenant("acct_2B"); ok {
		t.Error("an account no tenant lists was given a tenant")
	}
	if _, ok := b.Tenant(""); ok {
		t.Error("an event that names no account was given a tenant")
	}
}

func TestBadBusConfigsAreClearErrors(t *testing.T) {
	t.Parallel()
	for cfg, want := range map[string]string{
		`{"o":{"provider":"eventbridge","tenants":{"t":{"accounts":["*"]}}}}`:                                                                                                          `list the EventBridge sources it takes in "bus_sources"`,
		`{"o":{"provider":"eventbridge","bus_sources":["x"],"tenants":{"t":{"secrets":["literal:s"],"accounts":["*"]}}}}`:                                                              "no HTTP door",
		`{"o":{"provider":"eventbridge","bus_sources":["x"],"tenants":{"t":{}}}}`:                                                                                                      `no tenant lists "accounts"`,
		`{"s":{"provider":"stripe","bus_sources":["x"],"tenants":{"t":{"accounts":["*"]},"u":{}}}}`:                                                                                    "no secrets (its HTTP door) and no accounts",
		`{"g":{"provider":"github","bus_sources":["x"],"tenants":{"t":{"accounts":["*"]}}}}`:                                                                                           "cannot take events from the bus",
		`{"s":{"provider":"stripe","tenants":{"t":{"secrets":["literal:s"],"accounts":["acct_1"]}}}}`:                                                                                  `add "bus_sources"`,
		`{"s":{"provider":"stripe","bus_sources":["x"],"tenants":{"t":{"secrets":["literal:s"]}}}}`:                                                                                    `no tenant lists "accounts"`,
		`{"s":{"provider":"stripe","bus_sources":["x"],"tenants":{"a":{"accounts":["*"]},"b":{"accounts":["*"]}}}}`:                                                                    "both take any account",
		`{"s":{"provider":"stripe","bus_sources":["x"],"tenants":{"a":{"accounts":["acct_1"]},"b":{"accounts":["acct_1"]}}}}`:                                                          "listed by tenants",
		`{"s":{"provider":"stripe","bus_sources":["x"],"tenants":{"a":{"accounts":["123456789012"]}}}}`:                                                                                "want a Stripe account id",
		`{"o":{"provider":"eventbridge","bus_sources":["x"],"tenants":{"a":{"accounts":["acct_1"]}}}}`:                                                                                 "12-digit AWS account",
		`{"s":{"provider":"stripe","bus_sources":["a*b"],"tenants":{"a":{"accounts":["*"]}}}}`:                                                                                         "or a prefix ending in *",
		`{"s":{"provider":"stripe","bus_sources":["*"],"tenants":{"a":{"accounts":["*"]}}}}`:                                                                                           "or a prefix ending in *",
		`{"s":{"provider":"stripe","bus_sources":["x"],"key_header":"Id","tenants":{"a":{"accounts":["*"]}}}}`:                                                                         "has no headers",
		`{"o":{"provider":"eventbridge","bus_sources":["x"],"replay_guard":true,"tenants":{"a":{"accounts":["*"]}}}}`:                                                                  "replay_guard",
		`{"a":{"provider":"stripe","bus_sources":["p.*"],"tenants":{"a":{"accounts":["*"]}}},"b":{"provider":"eventbridge","bus_sources":["p.q"],"tenants":{"a":{"accounts":["*"]}}}}`: "both take bus events",
		`{"s":{"provider":"stripe","bus_sources":["stripe.relay"],"tenants":{"t":{"secrets":["literal:s"],"accounts":["acct_1"]}}}}`:                                                   "is not Stripe's partner event source",
		`{"s":{"provider":"stripe","bus_sources":["aws.partner/stripe.com/ed_1","aws.partner/*"],"tenants":{"t":{"secrets":["literal:s"],"accounts":["*"]}}}}`:                         "is not Stripe's partner event source",
		`{"o":{"provider":"eventbridge","bus_sources":["hookledger.stripe"],"tenants":{"a":{"accounts":["*"]}}}}`:                                                                      "matches the events hookledger forwards",
		`{"o":{"provider":"eventbridge","bus_sources":["hook*"],"tenants":{"a":{"accounts":["*"]}}}}`:                                                                                  "matches the events hookledger forwards",
	} {
		parsed, err := Parse([]byte(cfg))
		if err == nil {
			_, err = NewRegistry(parsed, &Secrets{})
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", cfg, err, want)
		}
	}
}

// A source's bus door raises its retention to the bus's horizon too.
func TestBusRetention(t *testing.T) {
	t.Parallel()
	reg := busRegistry(t, `{"o":{"provider":"eventbridge","bus_sources":["x"],"tenants":{"a":{"accounts":["*"]}}}}`)
	r := reg.Retentions(48 * time.Hour)["o"]
	if r.Duration != BusHorizon.Duration+RetentionMargin || !strings.Contains(r.Reason, "eventbridge retry horizon") {
		t.Errorf("retention %+v", r)
	}
	parsed, _ := Parse([]byte(`{"o":{"provider":"eventbridge","bus_sources":["x"],"retention":"24h","tenants":{"a":{"accounts":["*"]}}}}`))
	if _, err := NewRegistry(parsed, &Secrets{}); err == nil || !strings.Contains(err.Error(), "shorter than the eventbridge retry horizon") {
		t.Errorf("a retention below the bus's horizon: %v", err)
	}
}

// The bus door's grant is the sources document and nothing else: its check
// passes that one name in either store and refuses the signing secrets
// beside it.
func TestBusGrantsTheSourcesDocumentOnly(t *testing.T) {
	t.Parallel()
	g, err := ParseGrants("ssm_name=/hookledger/prod/sources;secretsmanager_name=hookledger/prod/sources")
	if err != nil {
		t.Fatal(err)
	}
	for ref, ok := range map[string]bool{
		"ssm:/hookledger/prod/sources":           true,
		"secretsmanager:hookledger/prod/sources": true,
		"secretsmanager:arn:aws:secretsmanager:us-east-1:123456789012:secret:hookledger/prod/sources-AbC123": true,
		"ssm:/hookledger/prod/stripe/acme":               false,
		"ssm:/hookledger/prod/sources/more":              false,
		"secretsmanager:hookledger/prod/stripe/globex":   false,
		"secretsmanager:hookledger/prod/sources-extra-1": false,
	} {
		r, err := ParseRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Check(r); (err == nil) != ok {
			t.Errorf("%s: %v, want allowed=%v", ref, err, ok)
		}
	}
}
