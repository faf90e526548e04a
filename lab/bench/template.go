package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hookledger/hookledger/internal/cfn"
	"gopkg.in/yaml.v3"
)

// Stack is what the cost model takes from template.yaml, so that it prices
// the deployment the template makes, not a copy of its numbers.
type Stack struct {
	BatchSize        int             // Mappings: Defaults ProcessorBatchSize
	BatchWindow      time.Duration   // parameter BatchWindowSeconds' default
	WindowChoices    []time.Duration // its allowed values
	Concurrency      int             // parameter ProcessorConcurrency's default
	MemoryMB         int             // Globals MemorySize
	ProcessorMB      int             // the processor's MemorySize (Globals' unless it sets its own)
	LogRetentionDays int             // Defaults LogRetentionDays
	ReclaimEvery     time.Duration   // Defaults ReclaimSchedule (rate(N unit))
	SystemLogLevel   string          // Globals LoggingConfig SystemLogLevel ("" when unset: INFO)
	PITR             bool            // the table's point-in-time recovery
	KMSTable         bool            // the table encrypted with a KMS key (SSEEnabled: true)
	AccessLogFormat  string          // the HTTP API stage's access log format
	// Alarms are the alarm resources with the condition each is under
	// ("" always); DashboardCondition the dashboard's.
	Alarms             map[string]string
	DashboardCondition string
}

// ReadStack reads path (template.yaml).
func ReadStack(path string) (Stack, error) {
	root, err := cfn.Read(path)
	if err != nil {
		return Stack{}, err
	}
	var st Stack
	var errs []string
	num := func(n *yaml.Node, what string) int {
		if n == nil {
			errs = append(errs, what+" missing")
			return 0
		}
		v, err := strconv.Atoi(n.Value)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %q is not a number", what, n.Value))
		}
		return v
	}
	defaults := cfn.Get(root, "Mappings", "Defaults", "Stack")
	st.BatchSize = num(cfn.Get(defaults, "ProcessorBatchSize"), "Defaults ProcessorBatchSize")
	st.LogRetentionDays = num(cfn.Get(defaults, "LogRetentionDays"), "Defaults LogRetentionDays")
	st.BatchWindow = time.Duration(num(cfn.Get(root, "Parameters", "BatchWindowSeconds", "Default"), "BatchWindowSeconds default")) * time.Second
	if av := cfn.Get(root, "Parameters", "BatchWindowSeconds", "AllowedValues"); av != nil {
		for _, v := range av.Content {
			st.WindowChoices = append(st.WindowChoices, time.Duration(num(v, "BatchWindowSeconds allowed value"))*time.Second)
		}
	}
	st.Concurrency = num(cfn.Get(root, "Parameters", "ProcessorConcurrency", "Default"), "ProcessorConcurrency default")
	st.MemoryMB = num(cfn.Get(root, "Globals", "Function", "MemorySize"), "Globals MemorySize")
	st.ProcessorMB = st.MemoryMB
	if n := cfn.Get(root, "Resources", "ProcessorFunction", "Properties", "MemorySize"); n != nil {
		st.ProcessorMB = num(n, "ProcessorFunction MemorySize")
	}
	if v := cfn.Get(root, "Globals", "Function", "LoggingConfig", "SystemLogLevel"); v != nil {
		st.SystemLogLevel = v.Value
	}
	if sched := cfn.Get(defaults, "ReclaimSchedule"); sched != nil {
		if st.ReclaimEvery, err = rateOf(sched.Value); err != nil {
			errs = append(errs, "Defaults ReclaimSchedule: "+err.Error())
		}
	} else {
		errs = append(errs, "Defaults ReclaimSchedule missing")
	}
	table := cfn.Get(root, "Resources", "LedgerTable", "Properties")
	st.PITR = cfn.Value(cfn.Get(table, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled")) == "true"
	st.KMSTable = cfn.Value(cfn.Get(table, "SSESpecification", "SSEEnabled")) == "true"
	st.AccessLogFormat = cfn.Value(cfn.Get(root, "Resources", "HttpApiStage", "Properties", "AccessLogSettings", "Format"))
	st.Alarms = map[string]string{}
	res := cfn.Get(root, "Resources")
	for i := 0; res != nil && i+1 < len(res.Content); i += 2 {
		r := res.Content[i+1]
		switch cfn.Value(cfn.Get(r, "Type")) {
		case "AWS::CloudWatch::Alarm":
			if cfn.Get(r, "Properties", "Metrics") != nil {
				errs = append(errs, res.Content[i].Value+" is a metric-math alarm: it is billed for each metric in it, which this model does not count")
			}
			st.Alarms[res.Content[i].Value] = cfn.Value(cfn.Get(r, "Condition"))
		case "AWS::CloudWatch::Dashboard":
			st.DashboardCondition = cfn.Value(cfn.Get(r, "Condition"))
		}
	}
	if len(errs) > 0 {
		return st, fmt.Errorf("%s: %s", path, strings.Join(errs, "; "))
	}
	return st, nil
}

// AlarmsWith counts the alarms a deployment has whose conditions hold (the
// conditions named true; every other is false).
func (st Stack) AlarmsWith(true_ ...string) int {
	on := map[string]bool{"": true}
	for _, c := range true_ {
		on[c] = true
	}
	n := 0
	for _, c := range st.Alarms {
		if on[c] {
			n++
		}
	}
	return n
}

// PlatformLines reports whether Lambda keeps its START/END/REPORT lines
// (INFO) at the template's system log level.
func (st Stack) PlatformLines() bool {
	switch strings.ToUpper(st.SystemLogLevel) {
	case "WARN", "ERROR", "FATAL":
		return false
	}
	return true
}

// AccessLogLine is the access log format with typical values: one line's
// bytes in CloudWatch Logs.
func (st Stack) AccessLogLine() string {
	typical := map[string]string{
		"$context.requestId": "Jb0uNiY2oAMEbXw=", "$context.identity.sourceIp": "203.0.113.17",
		"$context.requestTime": "30/Nov/2026:02:03:04 +0000", "$context.routeKey": "POST /webhooks/{source}/{tenant}",
		"$context.path": "/webhooks/stripe/acme", "$context.status": "200", "$context.responseLatency": "23",
		"$context.integrationErrorMessage": "-",
	}
	return regexp.MustCompile(`\$context\.[A-Za-z.]+`).ReplaceAllStringFunc(st.AccessLogFormat, func(v string) string {
		if t, ok := typical[v]; ok {
			return t
		}
		return "x"
	}) + "\n"
}

func rateOf(expr string) (time.Duration, error) {
	m := regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours)\)$`).FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("%q is not rate(N minutes|hours)", expr)
	}
	n, _ := strconv.Atoi(m[1])
	if strings.HasPrefix(m[2], "hour") {
		return time.Duration(n) * time.Hour, nil
	}
	return time.Duration(n) * time.Minute, nil
}
