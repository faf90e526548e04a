package trace

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hookledger/hookledger/internal/awsjson"
)

// XRay is the HOOKLEDGER_SPANS value that sends spans to X-Ray's OTLP
// endpoint in the function's region, signed with its role
// (xray:PutTraceSegments). The account needs CloudWatch Transaction Search.
const XRay = "xray"

// CheckSpans checks a HOOKLEDGER_SPANS value: "", XRay, or an http(s) URL.
func CheckSpans(where string) error {
	if where == "" || where == XRay {
		return nil
	}
	if u, err := url.Parse(where); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return nil
	}
	return fmt.Errorf("HOOKLEDGER_SPANS=%q: want %s (X-Ray's OTLP endpoint) or a collector's OTLP/HTTP traces URL, e.g. http://localhost:4318/v1/traces; unset, no spans", where, XRay)
}

// New returns the tracer HOOKLEDGER_SPANS asks for, exporting as service
// (the function's name), or nil when where is "": spans off.
func New(where string, cfg aws.Config, service string, log *slog.Logger) (*Tracer, error) {
	if where == "" {
		return nil, nil
	}
	if err := CheckSpans(where); err != nil {
		return nil, err
	}
	res := []Attr{{Key: "service.name", Str: service}, {Key: "cloud.provider", Str: "aws"}}
	if cfg.Region != "" {
		res = append(res, Attr{Key: "cloud.region", Str: cfg.Region})
	}
	post := postTo(where)
	if where == XRay {
		x := awsjson.NewXRay(cfg)
		post = x.PutSpans
	}
	return NewTracer(func(ctx context.Context, spans []*Span) error {
		body, err := encode(res, spans)
		if err != nil {
			return err
		}
		return post(ctx, body)
	}, nil, log), nil
}

// postTo posts a gzipped OTLP/HTTP JSON body to a collector.
func postTo(endpoint string) func(ctx context.Context, body []byte) error {
	return func(ctx context.Context, body []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("%s answered %d: %s", endpoint, resp.StatusCode, msg)
		}
		return nil
	}
}

// encode renders spans as one gzipped OTLP/HTTP JSON request
// (ExportTraceServiceRequest) with the resource attributes res: ids in hex,
// times and integers as decimal strings, as the protocol's JSON mapping
// says. It is written by hand: encoding/json's struct types would cost the
// binaries several times this code.
func encode(res []Attr, spans []*Span) ([]byte, error) {
	b := make([]byte, 0, 512*len(spans)+256)
	b = append(b, `{"resourceSpans":[{"resource":{"attributes":`...)
	b = appendAttrs(b, res)
	b = append(b, `},"scopeSpans":[{"scope":{"name":"hookledger"},"spans":[`...)
	for i, s := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"traceId":"`...)
		b = hex.AppendEncode(b, s.Trace[:])
		b = append(b, `","spanId":"`...)
		b = hex.AppendEncode(b, s.ID[:])
		if s.Parent != [8]byte{} {
			b = append(b, `","parentSpanId":"`...)
			b = hex.AppendEncode(b, s.Parent[:])
		}
		b = append(b, `","name":`...)
		b = appendString(b, s.Name)
		b = append(b, `,"kind":`...)
		b = strconv.AppendInt(b, int64(s.Kind), 10)
		b = append(b, `,"startTimeUnixNano":"`...)
		b = strconv.AppendInt(b, s.Began.UnixNano(), 10)
		b = append(b, `","endTimeUnixNano":"`...)
		b = strconv.AppendInt(b, s.Ended.UnixNano(), 10)
		b = append(b, `","attributes":`...)
		b = appendAttrs(b, s.Attrs)
		b = append(b, `,"links":[`...)
		for j, l := range s.Links {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"traceId":"`...)
			b = hex.AppendEncode(b, l.Trace[:])
			b = append(b, `","spanId":"`...)
			b = hex.AppendEncode(b, l.Parent[:])
			b = append(b, `"}`...)
		}
		b = append(b, ']')
		if s.Error != "" {
			b = append(b, `,"status":{"code":2,"message":`...) // 2: error
			b = appendString(b, s.Error)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	b = append(b, "]}]}]}"...)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func appendAttrs(b []byte, attrs []Attr) []byte {
	b = append(b, '[')
	for i, a := range attrs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = appendString(b, a.Key)
		if a.IsInt {
			b = append(b, `,"value":{"intValue":"`...)
			b = strconv.AppendInt(b, a.Int, 10)
			b = append(b, `"}}`...)
		} else {
			b = append(b, `,"value":{"stringValue":`...)
			b = appendString(b, a.Str)
			b = append(b, "}}"...)
		}
	}
	return append(b, ']')
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	s = strings.ToValidUTF8(s, "\uFFFD")
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, `\u00`...)
			b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"
