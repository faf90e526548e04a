package bench

import (
	"math"
)

// PricesRead is when the prices below were read (through the project's
// search tool; live AWS pages could not be opened from this machine, so each
// figure is the most recent one found, with its page).
const PricesRead = "2026-11-30"

// Price is one list price, us-east-1.
type Price struct {
	What   string
	USD    float64
	Per    string
	Source string
}

// The list prices the cost model uses (us-east-1, first pricing tier).
var (
	PriceAPIGateway = Price{"API Gateway HTTP API requests (first 300M/month; metered in 512 KB increments)", 1.00, "1M requests",
		"https://aws.amazon.com/api-gateway/pricing/ ; docs.aws.amazon.com/whitepapers/latest/best-practices-api-gateway-private-apis-integration/cost-optimization.html"}
	PriceLambdaRequests = Price{"Lambda requests", 0.20, "1M requests", "https://aws.amazon.com/lambda/pricing/ (archived 2026-06-18)"}
	PriceLambdaArm      = Price{"Lambda duration, arm64 (first 7.5B GB-s/month)", 0.0000133334, "GB-second", "https://aws.amazon.com/lambda/pricing/ (archived 2026-06-18)"}
	PriceDynamoWrite    = Price{"DynamoDB on-demand write request units (since the Nov 2024 cut)", 0.625, "1M WRU", "https://aws.amazon.com/dynamodb/pricing/on-demand/ (via airbyte.com/data-engineering-resources/dynamodb-pricing, 2025-07)"}
	PriceDynamoRead     = Price{"DynamoDB on-demand read request units", 0.125, "1M RRU", "https://aws.amazon.com/dynamodb/pricing/on-demand/ (same)"}
	PriceDynamoStorage  = Price{"DynamoDB Standard table storage (after 25 GB free)", 0.25, "GB-month", "https://aws.amazon.com/dynamodb/pricing/on-demand/"}
	PriceSQS            = Price{"SQS standard requests (each 64 KB chunk is one request)", 0.40, "1M requests", "https://aws.amazon.com/sqs/pricing/ (via factualminds.com, 2026-06-13)"}
	PriceLogsIngest     = Price{"CloudWatch Logs ingestion, Standard class (Lambda logs: first 10 TB tier)", 0.50, "GB", "https://aws.amazon.com/cloudwatch/pricing/ (via c3x.dev, 2026-06)"}
	PriceLogsStore      = Price{"CloudWatch Logs storage", 0.03, "GB-month", "https://aws.amazon.com/cloudwatch/pricing/ (same)"}
)

// AllPrices lists them in print order.
func AllPrices() []Price {
	return []Price{PriceAPIGateway, PriceLambdaRequests, PriceLambdaArm, PriceDynamoWrite, PriceDynamoRead, PriceDynamoStorage, PriceSQS, PriceLogsIngest, PriceLogsStore}
}

// Profile is what one delivery of a kind (new event, duplicate) costs, as
// measured.
type Profile struct {
	ReceiverMS  float64 // receiver handler time
	ProcessorMS float64 // processor time for the event (0 for a duplicate)
	WCU         float64 // table + index write units
	RCU         float64
	SQS         float64 // SQS billed requests, send + receive + delete
	LogBytes    float64 // handler log bytes, both functions
	StoredBytes float64 // item bytes kept until expiry (record + payload, 100 B overhead each)
}

// Assumptions are the model's knobs, printed with its results.
type Assumptions struct {
	MemoryMB         int     // every function's memory size
	ProcessorBatch   float64 // events per processor invocation (1: low traffic, the conservative case)
	PlatformLogBytes float64 // START/END/REPORT lines Lambda writes per invocation
	AccessLogBytes   float64 // the API's access log line per request
	RetentionDays    float64 // ledger retention (HOOKLEDGER_RETENTION)
	LogRetentionDays float64 // log groups' retention (LogRetentionDays)
}

// Breakdown is dollars per million deliveries, by service.
type Breakdown struct {
	APIGateway, Lambda, DynamoDB, SQS, Logs float64
}

// Total sums the services.
func (b Breakdown) Total() float64 { return b.APIGateway + b.Lambda + b.DynamoDB + b.SQS + b.Logs }

// Cost prices a million deliveries of which dupRate are duplicates.
func Cost(newEv, dup Profile, dupRate float64, a Assumptions) Breakdown {
	const million = 1e6
	nNew, nDup := million*(1-dupRate), million*dupRate
	gb := float64(a.MemoryMB) / 1024
	billedS := func(ms float64) float64 { return math.Ceil(ms) / 1000 } // 1 ms granularity
	procInv := nNew / math.Max(1, a.ProcessorBatch)
	var b Breakdown
	b.APIGateway = PriceAPIGateway.USD // one request per delivery, priced per million
	requests := million + procInv
	gbs := nNew*billedS(newEv.ReceiverMS)*gb + nDup*billedS(dup.ReceiverMS)*gb + procInv*billedS(newEv.ProcessorMS*math.Max(1, a.ProcessorBatch))*gb
	b.Lambda = requests/million*PriceLambdaRequests.USD + gbs*PriceLambdaArm.USD
	wcu := nNew*newEv.WCU + nDup*dup.WCU
	rcu := nNew*newEv.RCU + nDup*dup.RCU
	storedGBMonth := (nNew*newEv.StoredBytes + nDup*dup.StoredBytes) / 1e9 * a.RetentionDays / 30.4
	b.DynamoDB = wcu/million*PriceDynamoWrite.USD + rcu/million*PriceDynamoRead.USD + storedGBMonth*PriceDynamoStorage.USD
	b.SQS = (nNew*newEv.SQS + nDup*dup.SQS) / million * PriceSQS.USD
	logBytes := nNew*newEv.LogBytes + nDup*dup.LogBytes + million*a.AccessLogBytes + (million+procInv)*a.PlatformLogBytes
	b.Logs = logBytes/1e9*PriceLogsIngest.USD + logBytes/1e9*a.LogRetentionDays/30.4*PriceLogsStore.USD
	return b
}
