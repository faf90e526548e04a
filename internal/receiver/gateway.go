package receiver

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// pathParts takes source and tenant from the route's path parameters, or
// from a raw path of the form /webhooks/{source}/{tenant}.
func pathParts(req events.APIGatewayV2HTTPRequest) (string, string) {
	if s, t := req.PathParameters["source"], req.PathParameters["tenant"]; s != "" || t != "" {
		return s, t
	}
	parts := strings.Split(strings.Trim(req.RawPath, "/"), "/")
	if len(parts) == 3 && parts[0] == "webhooks" {
		return parts[1], parts[2]
	}
	return "", ""
}

// decodeBody returns the raw body bytes, or the answer for a body over the
// limit or with invalid base64. The limit is checked before decoding.
func (h *Handler) decodeBody(req events.APIGatewayV2HTTPRequest) ([]byte, *answer) {
	limit := h.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if !req.IsBase64Encoded {
		if len(req.Body) > limit {
			return nil, &ansTooLarge
		}
		return []byte(req.Body), nil
	}
	if base64.StdEncoding.DecodedLen(len(req.Body)) > limit+3 {
		return nil, &ansTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		return nil, &ansBadBase64
	}
	if len(b) > limit {
		return nil, &ansTooLarge
	}
	return b, nil
}

// headers turns API Gateway's lower-cased header map into an http.Header.
// API Gateway (and hookledger dev) join repeated headers with commas; the
// verifier tells that form from one header's value by the header's format
// and refuses it.
func headers(in map[string]string) http.Header {
	h := make(http.Header, len(in))
	for k, v := range in {
		// Add, not Set: should the map ever hold one header under two
		// spellings (both front doors lowercase names, so they do not),
		// the verifier sees two values and refuses the ambiguity, rather
		// than one picked by map order.
		h.Add(k, v)
	}
	return h
}

// requestURL rebuilds the URL the sender posted to, for schemes that sign it.
func requestURL(req events.APIGatewayV2HTTPRequest) string {
	host := req.RequestContext.DomainName
	if host == "" {
		host = req.Headers["host"]
	}
	proto := req.Headers["x-forwarded-proto"]
	if proto == "" {
		proto = "https"
	}
	u := proto + "://" + host + req.RawPath
	if req.RawQueryString != "" {
		u += "?" + req.RawQueryString
	}
	return u
}
