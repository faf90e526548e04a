// Package idempotency makes a Go function run once per key and return its
// stored result on repeats: API handlers behind API Gateway, SQS
// consumers, EventBridge targets, direct invocations, or any call inside
// them. Records live in DynamoDB (NewStore; TableInput is the table) or in
// a Backend of your own (NewStoreWith); package idempotencytest has an
// in-memory one for unit tests.
//
//	store, err := idempotency.NewStore(dynamodb.NewFromConfig(cfg), idempotency.Options{Table: table})
//	createOrder, err := idempotency.Wrap(store, "create-order", h.create,
//		idempotency.Config[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse]{
//			KeyPath:  "headers.idempotency-key",
//			OnReplay: idempotency.ReplayHeaderV2,
//		})
//	lambda.Start(createOrder.Handle)
//
//	receipt, info, err := idempotency.Do(ctx, store, "charge", order.ID, charge)
//
// The operation name ("create-order") is the key space. The key material
// comes from Config.Key, or from Config.KeyPath, a path into the input's
// JSON encoding: member names separated by dots, array indexes ([0]),
// quoted names for anything else (`detail."order.id"`), several paths
// separated by commas for a list, "$" for the whole input; a path that
// continues into a string holding JSON decodes it on the way, and header
// names match in any case. The stored
// key is "operation#" and the SHA-256 of the material's canonical JSON
// (KeyOf).
//
// The package depends on nothing of the webhook pipeline. README.md beside
// this file is its guide: keys, payload validation, in-progress calls,
// failures, size limits, costs, the conformance suite, and how it compares
// with Powertools for AWS Lambda. The example directory holds an HTTP API
// and an SQS consumer with their own SAM template.
package idempotency
