package bench

// PriceEventBridge is what EventBridge charges for an event put on a bus
// (custom and partner events alike; delivery to targets in the same
// account is not charged). The forward step puts one per event; Stripe's
// partner event source puts one per event on the bus the bus door reads,
// whether or not hookledger takes it.
var PriceEventBridge = Price{"EventBridge custom and partner events put on a bus (each 64 KB chunk is one event; same-account delivery to targets free)", 1.00, "1M events",
	"https://aws.amazon.com/eventbridge/pricing/ (via cloudburn.io/blog/amazon-eventbridge-pricing, 2026-03)"}

// EventBridgeChunk is EventBridge's metering unit: each 64 KB of an entry
// is one event.
const EventBridgeChunk = 64 * 1024

// DoorProfile is what one event costs a door, as measured.
type DoorProfile struct {
	LambdaMS      float64 // handler time per event
	Invocations   float64 // Lambda invocations per event (1 / batch for an SQS-driven function)
	WCU           float64 // table and index write units
	SQS           float64 // billed SQS requests per event (sends, receives and deletes amortised)
	Events        float64 // EventBridge events put per event
	APIGWRequests float64 // API Gateway requests per event
}

// DoorCost is dollars per million events through a door.
func DoorCost(p DoorProfile, memoryMB int) float64 {
	gbs := p.LambdaMS / 1000 * float64(memoryMB) / 1024
	return p.Invocations*PriceLambdaRequests.USD + gbs*1e6*PriceLambdaArm.USD +
		p.WCU*PriceDynamoWrite.USD + p.SQS*PriceSQS.USD + p.Events*PriceEventBridge.USD + p.APIGWRequests*PriceAPIGateway.USD
}
