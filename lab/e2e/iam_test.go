//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/hookledger/hookledger/internal/blob"
	"github.com/hookledger/hookledger/internal/sdkconfig"
)

// clients are SDK clients signed with one role's credentials.
type clients struct {
	ddb  *dynamodb.Client
	sqs  *sqs.Client
	ssm  *ssm.Client
	sm   *secretsmanager.Client
	logs *cloudwatchlogs.Client
	s3   *s3.Client
	lam  *lambda.Client
	eb   *eventbridge.Client
}

// probe is one AWS call a function makes (or must not be able to make),
// made with its role's credentials against the deployed resources.
type probe struct {
	action string
	allow  bool
	call   func(c clients) error
}

// deniedCodes are the error codes of an IAM refusal, per service.
var deniedCodes = []string{"AccessDeniedException", "AccessDenied", "AuthorizationError"}

func isDenied(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && slices.Contains(deniedCodes, api.ErrorCode())
}

// TestIAMIsEnforced proves that the deployed stack runs under enforced IAM
// and that each function's role is exactly what its code needs: every
// action the template grants a role is made with that role's credentials
// and must be allowed, every probe outside the grants must be denied, and
// every granted action must have a probe here. Removing one permission from
// template.yaml fails an allowed probe (and the pipeline below); adding one
// fails until a probe here says why the code needs it.
//
// Some probes make a call the service then refuses for another reason (a
// receipt handle that names no message, a message with an empty body):
// authorization comes first, so "not AccessDenied" is the proof, and
// nothing is disturbed on the live queue.
func TestIAMIsEnforced(t *testing.T) {
	e := setup(t)
	endpoint := must(t, "HOOKLEDGER_E2E_ENDPOINT")
	resp, err := e.client.Get(endpoint + "/_ministack/health")
	if err != nil {
		t.Fatal(err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(strings.ReplaceAll(string(health), " ", ""), `"auth":"enabled"`) {
		t.Fatalf("the emulator does not enforce IAM (health: %s); lab/scripts/e2e.sh starts it with AUTH=true", health)
	}
	roles := pairs(t, "HOOKLEDGER_E2E_ROLES")
	logGroups := pairs(t, "HOOKLEDGER_E2E_LOG_GROUPS")
	root, err := sdkconfig.Load(t.Context(), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	ssmName := strings.TrimPrefix(must(t, "HOOKLEDGER_E2E_SSM_REF"), "ssm:")
	smName := strings.TrimPrefix(must(t, "HOOKLEDGER_E2E_SM_REF"), "secretsmanager:")
	// A secret under the prefix referenced by its ARN without the random
	// suffix: the prefix grant must cover the real, suffixed ARN.
	smARN := strings.TrimPrefix(must(t, "HOOKLEDGER_E2E_SM_ARN_REF"), "secretsmanager:")
	paymentsRef := strings.TrimPrefix(must(t, "HOOKLEDGER_E2E_PAYMENTS_REF"), "ssm:")
	table, queueURL := e.table, e.queueURL
	probeKey := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "iamprobe#" + e.runID}, "sk": &ddbtypes.AttributeValueMemberS{Value: "probe"}}
	// A secret and a parameter that exist but are outside every grant.
	outside := "hookledger-outside/" + e.runID
	if _, err := secretsmanager.NewFromConfig(root).CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: &outside, SecretString: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ssm.NewFromConfig(root).PutParameter(t.Context(), &ssm.PutParameterInput{Name: aws.String("/" + outside), Value: aws.String("x"), Type: "SecureString"}); err != nil {
		t.Fatal(err)
	}

	putItem := func(c clients) error {
		item := map[string]ddbtypes.AttributeValue{"pk": probeKey["pk"], "sk": probeKey["sk"], "probe": &ddbtypes.AttributeValueMemberS{Value: "iam"}}
		_, err := c.ddb.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &table, Item: item})
		return err
	}
	getItem := func(c clients) error {
		_, err := c.ddb.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &table, Key: probeKey, ConsistentRead: aws.Bool(true)})
		return err
	}
	updateItem := func(c clients) error {
		_, err := c.ddb.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: &table, Key: probeKey,
			UpdateExpression: aws.String("SET probe = :v"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberS{Value: "u"}}})
		return err
	}
	deleteItem := func(c clients) error {
		_, err := c.ddb.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: &table, Key: probeKey})
		return err
	}
	queryDue := func(c clients) error {
		_, err := c.ddb.Query(t.Context(), &dynamodb.QueryInput{TableName: &table, IndexName: aws.String("due"),
			KeyConditionExpression: aws.String("due_shard = :s"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberN{Value: "99999"}}})
		return err
	}
	queryTable := func(c clients) error {
		_, err := c.ddb.Query(t.Context(), &dynamodb.QueryInput{TableName: &table,
			KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": probeKey["pk"]}})
		return err
	}
	scan := func(c clients) error {
		_, err := c.ddb.Scan(t.Context(), &dynamodb.ScanInput{TableName: &table, Limit: aws.Int32(1)})
		return err
	}
	// An empty body: SQS refuses it after authorizing the call, so nothing
	// reaches the processor.
	sendMessage := func(c clients) error {
		_, err := c.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &queueURL, MessageBody: aws.String("")})
		return err
	}
	receive := func(c clients) error {
		_, err := c.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &queueURL, MaxNumberOfMessages: 1, VisibilityTimeout: 0, WaitTimeSeconds: 0})
		return err
	}
	// The reclaimer takes the bodies only the dead-letter queue holds: it
	// receives from it and deletes what the ledger now holds. (The DLQ is
	// empty here, so the receive takes nothing.)
	dlqURL := e.dlqURL
	receiveDLQ := func(c clients) error {
		_, err := c.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &dlqURL, MaxNumberOfMessages: 1, VisibilityTimeout: 0, WaitTimeSeconds: 0})
		return err
	}
	deleteDLQ := func(c clients) error {
		_, err := c.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &dlqURL, ReceiptHandle: aws.String("iam-probe-names-no-message")})
		return err
	}
	deleteMessage := func(c clients) error {
		_, err := c.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &queueURL, ReceiptHandle: aws.String("iam-probe-names-no-message")})
		return err
	}
	changeVisibility := func(c clients) error {
		_, err := c.sqs.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: &queueURL, ReceiptHandle: aws.String("iam-probe-names-no-message"), VisibilityTimeout: 0})
		return err
	}
	queueAttributes := func(c clients) error {
		_, err := c.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &queueURL})
		return err
	}
	getParameter := func(name string) func(c clients) error {
		return func(c clients) error {
			_, err := c.ssm.GetParameter(t.Context(), &ssm.GetParameterInput{Name: &name, WithDecryption: aws.Bool(true)})
			return err
		}
	}
	getSecret := func(id string) func(c clients) error {
		return func(c clients) error {
			_, err := c.sm.GetSecretValue(t.Context(), &secretsmanager.GetSecretValueInput{SecretId: &id})
			return err
		}
	}
	stream := "iam-probe-" + e.runID
	createStream := func(fn string) func(c clients) error {
		return func(c clients) error {
			_, err := c.logs.CreateLogStream(t.Context(), &cloudwatchlogs.CreateLogStreamInput{LogGroupName: aws.String(logGroups[fn]), LogStreamName: aws.String(stream + "-" + fn)})
			return err
		}
	}
	putEvents := func(fn string) func(c clients) error {
		return func(c clients) error {
			_, err := c.logs.PutLogEvents(t.Context(), &cloudwatchlogs.PutLogEventsInput{LogGroupName: aws.String(logGroups[fn]), LogStreamName: aws.String(stream + "-" + fn),
				LogEvents: []logtypes.InputLogEvent{{Message: aws.String("iam probe"), Timestamp: aws.Int64(time.Now().UnixMilli())}}})
			return err
		}
	}
	// The payload store: the receiver writes bodies under payloads/, the
	// processor and the reclaimer read them; nothing else, nowhere else.
	bucket := must(t, "HOOKLEDGER_E2E_PAYLOAD_BUCKET")
	probeObject := "payloads/iam-probe-" + e.runID
	if _, err := blob.NewClient(root).PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &probeObject, Body: strings.NewReader("probe")}); err != nil {
		t.Fatal(err)
	}
	putObject := func(key string) func(c clients) error {
		return func(c clients) error {
			_, err := c.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("probe")})
			return err
		}
	}
	getObject := func(key string) func(c clients) error {
		return func(c clients) error {
			out, err := c.s3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
			if err == nil {
				out.Body.Close()
			}
			return err
		}
	}
	deleteObject := func(c clients) error {
		_, err := c.s3.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: &bucket, Key: &probeObject})
		return err
	}
	// The reconciler feeds missing events by invoking the receiver function;
	// an empty event is answered 404 (no source in the path), touching nothing.
	invokeReceiver := func(c clients) error {
		_, err := c.lam.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(must(t, "HOOKLEDGER_E2E_STACK") + "-receiver"), Payload: []byte(`{}`)})
		return err
	}
	// And reads the receiver's sources from its configuration at cold start.
	receiverConfig := func(c clients) error {
		_, err := c.lam.GetFunctionConfiguration(t.Context(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(must(t, "HOOKLEDGER_E2E_STACK") + "-receiver")})
		return err
	}
	otherConfig := func(c clients) error {
		_, err := c.lam.GetFunctionConfiguration(t.Context(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(must(t, "HOOKLEDGER_E2E_STACK") + "-processor")})
		return err
	}
	// The reclaimer reads due records and their payloads in batches.
	batchGet := func(c clients) error {
		_, err := c.ddb.BatchGetItem(t.Context(), &dynamodb.BatchGetItemInput{RequestItems: map[string]ddbtypes.KeysAndAttributes{
			table: {Keys: []map[string]ddbtypes.AttributeValue{probeKey}, ConsistentRead: aws.Bool(true)}}})
		return err
	}
	// It re-drives in batches; an empty body is refused after the call is
	// authorized, so nothing reaches the processor. AWS authorizes the batch
	// as sqs:SendMessage; MiniStack checks sqs:SendMessageBatch, which the
	// template grants only on an emulator deploy (EndpointUrl set, as here;
	// TestNoBatchActionsOnAWS keeps it off AWS).
	sendBatch := func(c clients) error {
		out, err := c.sqs.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: &queueURL,
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("probe"), MessageBody: aws.String("")}}})
		if err == nil && len(out.Failed) == 0 {
			return errors.New("an empty message was accepted")
		}
		return err
	}
	// And continues itself while a backlog remains: a dry run checks the
	// permission without running a pass.
	invokeSelf := func(fn string) func(c clients) error {
		return func(c clients) error {
			_, err := c.lam.Invoke(t.Context(), &lambda.InvokeInput{FunctionName: aws.String(must(t, "HOOKLEDGER_E2E_STACK") + "-" + fn),
				InvocationType: lambdatypes.InvocationTypeDryRun})
			return err
		}
	}
	credential := strings.TrimPrefix(must(t, "HOOKLEDGER_E2E_RECONCILE_CREDENTIAL_REF"), "ssm:")
	// And one in Secrets Manager under the same reconcile/ path, to prove
	// the deny (and the reconciler's grant) in both stores.
	credentialSecret := strings.TrimPrefix(credential, "/") + "-sm-" + e.runID
	if _, err := secretsmanager.NewFromConfig(root).CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: &credentialSecret, SecretString: aws.String("sk_test_probe")}); err != nil {
		t.Fatal(err)
	}
	// The EventBridge doors. The processor forwards to the forward bus (a
	// probe event of a source the consumer's rule does not take), and to
	// no other bus; the bus door reads its intake queue, parks on its
	// dead-letter queue, and reads the sources document under the prefix
	// (created here for the probe), no signing secret.
	putBusEvent := func(bus string) func(c clients) error {
		return func(c clients) error {
			out, err := c.eb.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
				EventBusName: aws.String(bus), Source: aws.String("iam.probe"), DetailType: aws.String("probe"), Detail: aws.String(`{}`)}}})
			if err == nil && out.FailedEntryCount > 0 {
				return fmt.Errorf("entry refused: %s", aws.ToString(out.Entries[0].ErrorCode))
			}
			return err
		}
	}
	forwardBus, inboundBus := must(t, "HOOKLEDGER_E2E_FORWARD_BUS"), must(t, "HOOKLEDGER_E2E_INBOUND_BUS")
	intakeURL, busDLQ := must(t, "HOOKLEDGER_E2E_BUS_INTAKE_URL"), must(t, "HOOKLEDGER_E2E_BUS_DLQ_URL")
	receiveIntake := func(c clients) error {
		_, err := c.sqs.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: &intakeURL, MaxNumberOfMessages: 1, VisibilityTimeout: 0, WaitTimeSeconds: 0})
		return err
	}
	deleteIntake := func(c clients) error {
		_, err := c.sqs.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: &intakeURL, ReceiptHandle: aws.String("iam-probe-names-no-message")})
		return err
	}
	visibilityIntake := func(c clients) error {
		_, err := c.sqs.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: &intakeURL, ReceiptHandle: aws.String("iam-probe-names-no-message"), VisibilityTimeout: 0})
		return err
	}
	attributesIntake := func(c clients) error {
		_, err := c.sqs.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: &intakeURL})
		return err
	}
	park := func(c clients) error {
		_, err := c.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: &busDLQ, MessageBody: aws.String("")})
		return err
	}
	prefix := strings.TrimPrefix(strings.Split(ssmName, "/stripe/")[0], "/")
	sourcesDoc := "/" + prefix + "/sources"
	if _, err := ssm.NewFromConfig(root).PutParameter(t.Context(), &ssm.PutParameterInput{Name: &sourcesDoc, Value: aws.String("{}"), Type: "SecureString", Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	sourcesSecret := prefix + "/sources"
	if _, err := secretsmanager.NewFromConfig(root).CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: &sourcesSecret, SecretString: aws.String("{}")}); err != nil && !strings.Contains(err.Error(), "ResourceExists") {
		t.Fatal(err)
	}
	probes := map[string][]probe{
		"receiver": {
			{"dynamodb:PutItem", true, putItem},
			{"dynamodb:GetItem", true, getItem},
			{"sqs:SendMessage", true, sendMessage},
			{"ssm:GetParameter", true, getParameter(ssmName)},
			{"secretsmanager:GetSecretValue", true, getSecret(smName)},
			{"secretsmanager:GetSecretValue", true, getSecret(smARN)},
			{"logs:CreateLogStream", true, createStream("receiver")},
			{"logs:PutLogEvents", true, putEvents("receiver")},
			{"dynamodb:UpdateItem", false, updateItem},
			{"dynamodb:DeleteItem", false, deleteItem},
			{"dynamodb:Scan", false, scan},
			{"dynamodb:Query", false, queryDue},
			{"sqs:ReceiveMessage", false, receive},
			{"ssm:GetParameter", false, getParameter("/" + outside)},
			{"secretsmanager:GetSecretValue", false, getSecret(outside)},
			// The reconciler's credentials, under the prefix but denied.
			{"ssm:GetParameter", false, getParameter(credential)},
			{"secretsmanager:GetSecretValue", false, getSecret(credentialSecret)},
			{"logs:CreateLogStream", false, createStream("processor")},
			{"s3:PutObject", true, putObject(probeObject)},
			{"s3:PutObject", false, putObject("elsewhere/iam-probe-" + e.runID)},
			{"s3:GetObject", false, getObject(probeObject)},
			{"s3:DeleteObject", false, deleteObject},
		},
		"processor": {
			{"dynamodb:UpdateItem", true, updateItem},
			{"dynamodb:GetItem", true, getItem},
			{"sqs:ReceiveMessage", true, receive},
			{"sqs:DeleteMessage", true, deleteMessage},
			{"sqs:ChangeMessageVisibility", true, changeVisibility},
			{"sqs:GetQueueAttributes", true, queueAttributes},
			{"logs:CreateLogStream", true, createStream("processor")},
			{"logs:PutLogEvents", true, putEvents("processor")},
			{"dynamodb:PutItem", false, putItem},
			{"dynamodb:DeleteItem", false, deleteItem},
			{"dynamodb:Query", false, queryDue},
			{"sqs:SendMessage", false, sendMessage},
			// Effect settings written as secret references (the lab's
			// PAYMENTS_URL is one), within the receiver's grants.
			{"ssm:GetParameter", true, getParameter(paymentsRef)},
			{"secretsmanager:GetSecretValue", true, getSecret(smName)},
			{"ssm:GetParameter", false, getParameter("/" + outside)},
			{"secretsmanager:GetSecretValue", false, getSecret(outside)},
			{"ssm:GetParameter", false, getParameter(credential)},
			{"secretsmanager:GetSecretValue", false, getSecret(credentialSecret)},
			{"s3:GetObject", true, getObject(probeObject)},
			{"s3:PutObject", false, putObject(probeObject)},
			{"s3:DeleteObject", false, deleteObject},
			{"events:PutEvents", true, putBusEvent(forwardBus)},
			{"events:PutEvents", false, putBusEvent(inboundBus)},
		},
		"bus": {
			{"dynamodb:PutItem", true, putItem},
			{"dynamodb:GetItem", true, getItem},
			{"sqs:SendMessage", true, sendMessage},
			{"sqs:ReceiveMessage", true, receiveIntake},
			{"sqs:DeleteMessage", true, deleteIntake},
			{"sqs:ChangeMessageVisibility", true, visibilityIntake},
			{"sqs:GetQueueAttributes", true, attributesIntake},
			{"sqs:SendMessage", true, park},
			{"ssm:GetParameter", true, getParameter(sourcesDoc)},
			{"secretsmanager:GetSecretValue", true, getSecret(sourcesSecret)},
			{"logs:CreateLogStream", true, createStream("bus")},
			{"logs:PutLogEvents", true, putEvents("bus")},
			{"dynamodb:UpdateItem", false, updateItem},
			{"dynamodb:Query", false, queryDue},
			{"sqs:ReceiveMessage", false, receive},
			// No signing secret, no effect setting, no reconciler credential.
			{"ssm:GetParameter", false, getParameter(ssmName)},
			{"secretsmanager:GetSecretValue", false, getSecret(smName)},
			{"ssm:GetParameter", false, getParameter(paymentsRef)},
			{"ssm:GetParameter", false, getParameter(credential)},
			{"events:PutEvents", false, putBusEvent(forwardBus)},
			{"s3:PutObject", false, putObject(probeObject)},
		},
		"reclaimer": {
			{"dynamodb:Query", true, queryDue},
			{"dynamodb:GetItem", true, getItem},
			{"dynamodb:BatchGetItem", true, batchGet},
			{"dynamodb:UpdateItem", true, updateItem},
			{"sqs:SendMessage", true, sendMessage},
			{"sqs:SendMessageBatch", true, sendBatch}, // the emulator's name for it; see sendBatch
			{"sqs:GetQueueAttributes", true, queueAttributes},
			{"lambda:InvokeFunction", true, invokeSelf("reclaimer")},
			{"lambda:InvokeFunction", false, invokeSelf("receiver")},
			{"logs:CreateLogStream", true, createStream("reclaimer")},
			{"logs:PutLogEvents", true, putEvents("reclaimer")},
			{"dynamodb:Query", false, queryTable},
			{"dynamodb:PutItem", false, putItem},
			{"dynamodb:DeleteItem", false, deleteItem},
			{"sqs:ReceiveMessage", false, receive},
			{"sqs:DeleteMessage", false, deleteMessage},
			{"sqs:ReceiveMessage", true, receiveDLQ},
			{"sqs:DeleteMessage", true, deleteDLQ},
			{"ssm:GetParameter", false, getParameter(ssmName)},
			{"s3:GetObject", true, getObject(probeObject)},
			{"s3:PutObject", false, putObject(probeObject)},
		},
		"reconciler": {
			{"dynamodb:GetItem", true, getItem},
			{"lambda:InvokeFunction", true, invokeReceiver},
			{"lambda:GetFunctionConfiguration", true, receiverConfig},
			{"lambda:GetFunctionConfiguration", false, otherConfig},
			{"ssm:GetParameter", true, getParameter(ssmName)},
			{"ssm:GetParameter", true, getParameter(credential)},
			{"secretsmanager:GetSecretValue", true, getSecret(credentialSecret)},
			{"secretsmanager:GetSecretValue", true, getSecret(smName)},
			{"secretsmanager:GetSecretValue", true, getSecret(smARN)},
			{"logs:CreateLogStream", true, createStream("reconciler")},
			{"logs:PutLogEvents", true, putEvents("reconciler")},
			{"dynamodb:PutItem", false, putItem},
			{"dynamodb:UpdateItem", false, updateItem},
			{"dynamodb:Query", false, queryDue},
			{"sqs:SendMessage", false, sendMessage},
			{"ssm:GetParameter", false, getParameter("/" + outside)},
			{"secretsmanager:GetSecretValue", false, getSecret(outside)},
		},
	}
	// The probe item must exist for GetItem and UpdateItem to be meaningful.
	if err := putItem(clients{ddb: dynamodb.NewFromConfig(root)}); err != nil {
		t.Fatal(err)
	}
	iamc := iam.NewFromConfig(root)
	for _, fn := range []string{"receiver", "processor", "reclaimer", "reconciler", "bus"} {
		t.Run(fn, func(t *testing.T) {
			if roles[fn] == "" {
				t.Fatalf("no %s role in HOOKLEDGER_E2E_ROLES (lab/scripts/e2e.sh deploys the reconciler with a ReconcileConfig)", fn)
			}
			c := roleClients(t, root, roles[fn])
			probed := map[string]bool{}
			for _, p := range probes[fn] {
				err := p.call(c)
				switch {
				case p.allow && isDenied(err):
					t.Errorf("%s role: %s denied; the function needs it: %v", fn, p.action, err)
				case p.allow && err != nil && !isAPIError(err):
					t.Errorf("%s role: %s: %v (no answer from the service)", fn, p.action, err)
				case !p.allow && !isDenied(err):
					t.Errorf("%s role: %s was not denied (err %v): IAM is not enforced, or the role grants more than it needs", fn, p.action, err)
				}
				if p.allow {
					probed[p.action] = true
				}
			}
			// Every action the deployed role grants is probed above.
			for _, action := range grantedActions(t, iamc, roles[fn]) {
				if !probed[action] {
					t.Errorf("%s role grants %s, which no probe exercises: add one (and say why the code needs it) or remove the grant", fn, action)
				}
			}
		})
	}
}

func isAPIError(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api)
}

// pairs reads "name=value,name=value" from an environment variable.
func pairs(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range strings.Split(must(t, name), ",") {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			t.Fatalf("%s: %q is not name=value", name, p)
		}
		out[k] = v
	}
	return out
}

// roleClients assumes roleARN as the emulator's root (MiniStack lets root
// assume a role trusted only by lambda.amazonaws.com; AWS would not) and
// returns clients signed with the session's credentials.
func roleClients(t *testing.T, root aws.Config, roleARN string) clients {
	t.Helper()
	out, err := sts.NewFromConfig(root).AssumeRole(t.Context(), &sts.AssumeRoleInput{RoleArn: &roleARN, RoleSessionName: aws.String("iam-probe")})
	if err != nil {
		t.Fatalf("assume %s: %v", roleARN, err)
	}
	cfg := root.Copy()
	cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(
		*out.Credentials.AccessKeyId, *out.Credentials.SecretAccessKey, *out.Credentials.SessionToken))
	cfg.RetryMaxAttempts = 1
	return clients{ddb: dynamodb.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg), ssm: ssm.NewFromConfig(cfg),
		sm: secretsmanager.NewFromConfig(cfg), logs: cloudwatchlogs.NewFromConfig(cfg), s3: blob.NewClient(cfg), lam: lambda.NewFromConfig(cfg),
		eb: eventbridge.NewFromConfig(cfg)}
}

// grantedActions lists the Allow actions of a role's inline policies, as
// deployed.
func grantedActions(t *testing.T, c *iam.Client, roleARN string) []string {
	t.Helper()
	name := roleARN[strings.LastIndex(roleARN, "/")+1:]
	list, err := c.ListRolePolicies(t.Context(), &iam.ListRolePoliciesInput{RoleName: &name})
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, pn := range list.PolicyNames {
		p, err := c.GetRolePolicy(t.Context(), &iam.GetRolePolicyInput{RoleName: &name, PolicyName: aws.String(pn)})
		if err != nil {
			t.Fatal(err)
		}
		doc := *p.PolicyDocument
		if u, err := url.QueryUnescape(doc); err == nil && !strings.HasPrefix(strings.TrimSpace(doc), "{") {
			doc = u
		}
		var pol struct {
			Statement []struct {
				Effect string
				Action any
			}
		}
		if err := json.Unmarshal([]byte(doc), &pol); err != nil {
			t.Fatalf("policy %s of %s: %v", pn, name, err)
		}
		for _, st := range pol.Statement {
			if st.Effect != "Allow" {
				continue
			}
			switch a := st.Action.(type) {
			case string:
				set[a] = true
			case []any:
				for _, x := range a {
					set[fmt.Sprint(x)] = true
				}
			}
		}
	}
	var out []string
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("role %s has no inline policy actions", name)
	}
	return out
}
