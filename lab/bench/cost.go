package bench

import (
	"math"
	"time"
)

// PricesRead is when the prices below were read (through the project's
// search tool; live AWS pages could not be opened from this machine, so each
// figure is the most recent one found, with its page). Prices added later
// carry their own date in their source.
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
	PriceDynamoStorage  = Price{"DynamoDB Standard table storage, indexes included (after 25 GB free)", 0.25, "GB-month", "https://aws.amazon.com/dynamodb/pricing/on-demand/"}
	PricePITR           = Price{"DynamoDB continuous backups (point-in-time recovery), per GB-month of table size (table data and local indexes)", 0.20, "GB-month",
		"https://aws.amazon.com/dynamodb/pricing/on-demand/ (via finops.com.py/services/dynamodb/backups; read 2026-12-01)"}
	PriceSQS         = Price{"SQS standard requests (each 64 KB chunk is one request)", 0.40, "1M requests", "https://aws.amazon.com/sqs/pricing/ (via factualminds.com, 2026-06-13)"}
	PriceLogsIngest  = Price{"CloudWatch Logs ingestion, Standard class (Lambda logs: first 10 TB tier)", 0.50, "GB", "https://aws.amazon.com/cloudwatch/pricing/ (via c3x.dev, 2026-06)"}
	PriceLogsStore   = Price{"CloudWatch Logs storage", 0.03, "GB-month", "https://aws.amazon.com/cloudwatch/pricing/ (same)"}
	PriceFunctionURL = Price{"Lambda function URL (no charge of its own: the function's requests and duration)", 0, "1M requests",
		"https://aws.amazon.com/blogs/aws/announcing-aws-lambda-function-urls-built-in-https-endpoints-for-single-function-microservices/"}
	PriceS3Put     = Price{"S3 Standard PUT requests", 0.005, "1K requests", "https://aws.amazon.com/s3/pricing/ (via cloudburn.io/blog/amazon-s3-pricing, 2026-03, and c3x.dev/blog/s3-request-fees-explained)"}
	PriceS3Get     = Price{"S3 Standard GET requests", 0.0004, "1K requests", "https://aws.amazon.com/s3/pricing/ (same)"}
	PriceS3Storage = Price{"S3 Standard storage (first 50 TB)", 0.023, "GB-month", "https://aws.amazon.com/s3/pricing/ (same)"}
	PriceAlarm     = Price{"CloudWatch alarm, standard resolution, per metric it watches (a metric-math alarm: each metric in it)", 0.10, "alarm metric-month",
		"https://aws.amazon.com/cloudwatch/pricing/ (\"alarm metrics\"; infracost counts a metric-math alarm's metrics: github.com/infracost/infracost internal/resources/aws/cloudwatch_metric_alarm.go; read 2026-12-01)"}
	PriceCustomMetric = Price{"CloudWatch custom metric (first 10,000; prorated by the hour, charged only for hours it receives data)", 0.30, "metric-month",
		"https://aws.amazon.com/cloudwatch/pricing/ (via github.com/nishinoshake/aws-rough/issues/37 and vantage.sh/blog/cloudwatch-metrics-pricing-explained-in-plain-english; read 2026-12-01)"}
	PriceDashboard = Price{"CloudWatch dashboard (an account's first three, up to 50 metrics each, are free)", 3.00, "dashboard-month",
		"https://aws.amazon.com/cloudwatch/pricing/ (free tier table; $3 per dashboard via github.com/nishinoshake/aws-rough/issues/37; read 2026-12-01)"}
	PriceKMS = Price{"KMS requests, AWS managed keys too (the table's aws/dynamodb key)", 0.03, "10K requests",
		"https://aws.amazon.com/kms/pricing/ (\"you will be charged on any API request made to AWS-managed keys\"; read 2026-12-01)"}
)

// APIGatewayIncrement is how an HTTP API meters a request: "in 512 KB
// increments" (PriceAPIGateway's page), so a 2 MB webhook is 4 requests.
const APIGatewayIncrement = 512 * 1024

// Month is the month the bills are for: 730 hours, as AWS's pricing
// examples count one.
const Month = 730 * time.Hour

// AllPrices lists them in print order.
func AllPrices() []Price {
	return []Price{PriceAPIGateway, PriceFunctionURL, PriceLambdaRequests, PriceLambdaArm, PriceDynamoWrite, PriceDynamoRead, PriceDynamoStorage, PricePITR,
		PriceSQS, PriceLogsIngest, PriceLogsStore, PriceS3Put, PriceS3Get, PriceS3Storage, PriceAlarm, PriceCustomMetric, PriceDashboard, PriceKMS}
}

// LambdaMBPerVCPU is the memory size at which a function gets one vCPU:
// "Lambda allocates CPU power in proportion to the amount of memory
// configured ... At 1,769 MB, a function has the equivalent of one vCPU"
// (docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html).
const LambdaMBPerVCPU = 1769

// LambdaMS is a handler's time on Lambda at memoryMB: its time measured
// here (AWS latencies injected, its CPU work on a full core of this
// machine) with the CPU work stretched to the function's share of a vCPU.
// The premise: a vCPU of Lambda's does in a second what a core here does.
func LambdaMS(wallMS, cpuMS float64, memoryMB int) float64 {
	return wallMS + cpuMS*(LambdaMBPerVCPU/float64(memoryMB)-1)
}

// Profile is what one delivery of a kind (new event, duplicate) costs, as
// measured against the emulator.
type Profile struct {
	ReceiverMS float64 // receiver handler time (AWS latency injected)
	// ProcessorMS is the processor's time for this event alone, in a batch
	// of one (0 for a duplicate, which never reaches the queue).
	ProcessorMS float64
	// ReceiverCPUMS and ProcessorCPUMS are the CPU time of those, on a
	// full core here (LambdaMS stretches them).
	ReceiverCPUMS, ProcessorCPUMS float64
	WCU                           float64 // table + index write units, receiver and processor
	RCU                           float64 // read units, the reclaimer's look at the done record's due entry included
	SQSSend                       float64 // billed send requests (64 KB chunks)
	SQSChunks                     float64 // 64 KB chunks of the queue message (what one receive of it bills); 0 for a duplicate
	LogBytes                      float64 // the handlers' log lines, both functions
	MetricBytes                   float64 // their metric (EMF) lines
	TableBytes                    float64 // item bytes kept until expiry (record and payload, 100 B of overhead each)
	IndexBytes                    float64 // due-index entry bytes kept until expiry (keys and 100 B)
	// BodyBytes is the request body, for the HTTP API's 512 KB metering
	// (0: one request).
	BodyBytes float64
	// S3Puts, S3Gets and S3Bytes are the payload store's requests and the
	// bytes it keeps until expiry (0 without the store).
	S3Puts, S3Gets, S3Bytes float64
}

// Assumptions are the model's premises, printed with its results.
type Assumptions struct {
	MemoryMB         int     // the functions' memory size
	ProcessorMB      int     // the processor's (0: MemoryMB)
	RetentionDays    float64 // ledger retention (HOOKLEDGER_RETENTION)
	LogRetentionDays float64 // log groups' retention (LogRetentionDays)
	// FunctionURL prices a Lambda function URL as the front door instead of
	// the HTTP API: no API Gateway request charge and no access log line.
	FunctionURL bool
	// Batch is events per processor invocation at the traffic priced;
	// ReceivesPerEvent the event source's receive requests per event (SQS
	// answers a long poll as soon as a message is there: about one each).
	Batch            float64
	ReceivesPerEvent float64
	// BatchMS is the processor's time for an invocation of b events, run
	// side by side (measured at b = 1 and 10, linear between).
	BatchMS func(b float64) float64
	// PlatformLogBytes is what Lambda writes of its own per invocation
	// (START/END/REPORT; 0 when the template's system log level drops them);
	// AccessLogBytes the HTTP API's access log line per request.
	PlatformLogBytes float64
	AccessLogBytes   float64
	PITR             bool
}

// Breakdown is dollars per million deliveries, by service.
type Breakdown struct {
	APIGateway, Lambda, DynamoDB, SQS, Logs, S3 float64
	// SQSReceives is the event source's receive requests in it (the
	// all-in bill compares them with the idle long polls).
	SQSReceives float64
}

// Total sums the services.
func (b Breakdown) Total() float64 {
	return b.APIGateway + b.Lambda + b.DynamoDB + b.SQS + b.Logs + b.S3
}

// Scale is the breakdown for n deliveries instead of a million.
func (b Breakdown) Scale(n float64) Breakdown {
	f := n / 1e6
	return Breakdown{b.APIGateway * f, b.Lambda * f, b.DynamoDB * f, b.SQS * f, b.Logs * f, b.S3 * f, b.SQSReceives * f}
}

// Cost prices a million deliveries of which dupRate are duplicates.
func Cost(newEv, dup Profile, dupRate float64, a Assumptions) Breakdown {
	const million = 1e6
	nNew, nDup := million*(1-dupRate), million*dupRate
	gb := float64(a.MemoryMB) / 1024
	billedS := func(ms float64) float64 { return math.Ceil(ms) / 1000 } // 1 ms granularity
	batch := math.Max(1, a.Batch)
	invocations := nNew / batch
	var b Breakdown
	if !a.FunctionURL {
		metered := func(p Profile) float64 { return math.Max(1, math.Ceil(p.BodyBytes/APIGatewayIncrement)) }
		b.APIGateway = (nNew*metered(newEv) + nDup*metered(dup)) / million * PriceAPIGateway.USD
	}
	batchMS := newEv.ProcessorMS * batch // side by side would be less: a model without BatchMS is the upper bound
	if a.BatchMS != nil {
		batchMS = a.BatchMS(batch)
	}
	procMB := a.ProcessorMB
	if procMB == 0 {
		procMB = a.MemoryMB
	}
	batchMS = LambdaMS(batchMS, newEv.ProcessorCPUMS*batch, procMB)
	rcvNew, rcvDup := LambdaMS(newEv.ReceiverMS, newEv.ReceiverCPUMS, a.MemoryMB), LambdaMS(dup.ReceiverMS, dup.ReceiverCPUMS, a.MemoryMB)
	gbs := nNew*billedS(rcvNew)*gb + nDup*billedS(rcvDup)*gb + invocations*billedS(batchMS)*float64(procMB)/1024
	b.Lambda = (million+invocations)/million*PriceLambdaRequests.USD + gbs*PriceLambdaArm.USD
	months := a.RetentionDays / 30.4 // how long an item is kept, in months
	tableGB := (nNew*newEv.TableBytes + nDup*dup.TableBytes) / 1e9
	indexGB := (nNew*newEv.IndexBytes + nDup*dup.IndexBytes) / 1e9
	b.DynamoDB = (nNew*newEv.WCU+nDup*dup.WCU)/million*PriceDynamoWrite.USD + (nNew*newEv.RCU+nDup*dup.RCU)/million*PriceDynamoRead.USD +
		(tableGB+indexGB)*months*PriceDynamoStorage.USD
	if a.PITR {
		b.DynamoDB += tableGB * months * PricePITR.USD
	}
	receives := math.Max(1, newEv.SQSChunks) * a.ReceivesPerEvent * nNew
	b.SQSReceives = receives
	b.SQS = ((nNew*newEv.SQSSend + nDup*dup.SQSSend) + receives + invocations /* one DeleteMessageBatch a batch */) / million * PriceSQS.USD
	access := a.AccessLogBytes
	if a.FunctionURL {
		access = 0
	}
	logBytes := nNew*(newEv.LogBytes+newEv.MetricBytes) + nDup*(dup.LogBytes+dup.MetricBytes) + million*access + (million+invocations)*a.PlatformLogBytes
	b.Logs = logBytes / 1e9 * (PriceLogsIngest.USD + a.LogRetentionDays/30.4*PriceLogsStore.USD)
	s3GBMonth := (nNew*newEv.S3Bytes + nDup*dup.S3Bytes) / 1e9 * months
	b.S3 = (nNew*newEv.S3Puts+nDup*dup.S3Puts)/1000*PriceS3Put.USD + (nNew*newEv.S3Gets+nDup*dup.S3Gets)/1000*PriceS3Get.USD + s3GBMonth*PriceS3Storage.USD
	return b
}

// BillItem is one line of a monthly bill.
type BillItem struct {
	What     string
	Quantity string  // what is counted, in its unit
	USD      float64 // per month
	Source   string  // the price or measurement it comes from
}

// BillTotal sums a bill.
func BillTotal(items []BillItem) float64 {
	t := 0.0
	for _, it := range items {
		t += it.USD
	}
	return t
}
