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
	PriceFunctionURL    = Price{"Lambda function URL (no charge of its own: the function's requests and duration)", 0, "1M requests",
		"https://aws.amazon.com/blogs/aws/announcing-aws-lambda-function-urls-built-in-https-endpoints-for-single-function-microservices/"}
	PriceS3Put     = Price{"S3 Standard PUT requests", 0.005, "1K requests", "https://aws.amazon.com/s3/pricing/ (via cloudburn.io/blog/amazon-s3-pricing, 2026-03, and c3x.dev/blog/s3-request-fees-explained)"}
	PriceS3Get     = Price{"S3 Standard GET requests", 0.0004, "1K requests", "https://aws.amazon.com/s3/pricing/ (same)"}
	PriceS3Storage = Price{"S3 Standard storage (first 50 TB)", 0.023, "GB-month", "https://aws.amazon.com/s3/pricing/ (same)"}
)

// APIGatewayIncrement is how an HTTP API meters a request: "in 512 KB
// increments" (PriceAPIGateway's page), so a 2 MB webhook is 4 requests.
const APIGatewayIncrement = 512 * 1024

// AllPrices lists them in print order.
func AllPrices() []Price {
	return []Price{PriceAPIGateway, PriceFunctionURL, PriceLambdaRequests, PriceLambdaArm, PriceDynamoWrite, PriceDynamoRead, PriceDynamoStorage, PriceSQS, PriceLogsIngest, PriceLogsStore,
		PriceS3Put, PriceS3Get, PriceS3Storage}
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
	// BodyBytes is the request body, for the HTTP API's 512 KB metering
	// (0: one request).
	BodyBytes float64
	// S3Puts, S3Gets and S3Bytes are the payload store's requests and the
	// bytes it keeps until expiry (0 without the store).
	S3Puts, S3Gets, S3Bytes float64
}

// Assumptions are the model's knobs, printed with its results.
type Assumptions struct {
	MemoryMB         int     // every function's memory size
	ProcessorBatch   float64 // events per processor invocation (1: low traffic, the conservative case)
	PlatformLogBytes float64 // START/END/REPORT lines Lambda writes per invocation
	AccessLogBytes   float64 // the API's access log line per request
	RetentionDays    float64 // ledger retention (HOOKLEDGER_RETENTION)
	LogRetentionDays float64 // log groups' retention (LogRetentionDays)
	// FunctionURL prices a Lambda function URL as the front door instead of
	// the HTTP API: no API Gateway request charge and no access log line.
	FunctionURL bool
}

// Breakdown is dollars per million deliveries, by service.
type Breakdown struct {
	APIGateway, Lambda, DynamoDB, SQS, Logs, S3 float64
}

// Total sums the services.
func (b Breakdown) Total() float64 {
	return b.APIGateway + b.Lambda + b.DynamoDB + b.SQS + b.Logs + b.S3
}

// Cost prices a million deliveries of which dupRate are duplicates.
func Cost(newEv, dup Profile, dupRate float64, a Assumptions) Breakdown {
	const million = 1e6
	nNew, nDup := million*(1-dupRate), million*dupRate
	gb := float64(a.MemoryMB) / 1024
	billedS := func(ms float64) float64 { return math.Ceil(ms) / 1000 } // 1 ms granularity
	procInv := nNew / math.Max(1, a.ProcessorBatch)
	var b Breakdown
	if !a.FunctionURL {
		metered := func(p Profile) float64 { return math.Max(1, math.Ceil(p.BodyBytes/APIGatewayIncrement)) }
		b.APIGateway = (nNew*metered(newEv) + nDup*metered(dup)) / million * PriceAPIGateway.USD
	}
	requests := million + procInv
	gbs := nNew*billedS(newEv.ReceiverMS)*gb + nDup*billedS(dup.ReceiverMS)*gb + procInv*billedS(newEv.ProcessorMS*math.Max(1, a.ProcessorBatch))*gb
	b.Lambda = requests/million*PriceLambdaRequests.USD + gbs*PriceLambdaArm.USD
	wcu := nNew*newEv.WCU + nDup*dup.WCU
	rcu := nNew*newEv.RCU + nDup*dup.RCU
	storedGBMonth := (nNew*newEv.StoredBytes + nDup*dup.StoredBytes) / 1e9 * a.RetentionDays / 30.4
	b.DynamoDB = wcu/million*PriceDynamoWrite.USD + rcu/million*PriceDynamoRead.USD + storedGBMonth*PriceDynamoStorage.USD
	b.SQS = (nNew*newEv.SQS + nDup*dup.SQS) / million * PriceSQS.USD
	access := a.AccessLogBytes
	if a.FunctionURL {
		access = 0
	}
	logBytes := nNew*newEv.LogBytes + nDup*dup.LogBytes + million*access + (million+procInv)*a.PlatformLogBytes
	b.Logs = logBytes/1e9*PriceLogsIngest.USD + logBytes/1e9*a.LogRetentionDays/30.4*PriceLogsStore.USD
	s3GBMonth := (nNew*newEv.S3Bytes + nDup*dup.S3Bytes) / 1e9 * a.RetentionDays / 30.4
	b.S3 = (nNew*newEv.S3Puts+nDup*dup.S3Puts)/1000*PriceS3Put.USD + (nNew*newEv.S3Gets+nDup*dup.S3Gets)/1000*PriceS3Get.USD + s3GBMonth*PriceS3Storage.USD
	return b
}
