package idempotency

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// ReplayedHeader marks a replayed HTTP response, as Stripe does.
const ReplayedHeader = "Idempotent-Replayed"

// ReplayHeaderV2 is an OnReplay hook for API Gateway HTTP APIs (payload
// 2.0) and function URLs: it adds "Idempotent-Replayed: true" to a
// replayed response, leaving the stored one untouched.
func ReplayHeaderV2(_ context.Context, _ events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse, _ Info) events.APIGatewayV2HTTPResponse {
	resp.Headers = withHeader(resp.Headers)
	return resp
}

// ReplayHeaderV1 is ReplayHeaderV2 for REST APIs (payload 1.0).
func ReplayHeaderV1(_ context.Context, _ events.APIGatewayProxyRequest, resp events.APIGatewayProxyResponse, _ Info) events.APIGatewayProxyResponse {
	resp.Headers = withHeader(resp.Headers)
	return resp
}

func withHeader(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for k, v := range h {
		out[k] = v
	}
	out[ReplayedHeader] = "true"
	return out
}
