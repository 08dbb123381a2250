// SPDX-License-Identifier: Apache-2.0

package push

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

// Whether a failed push may succeed later is decided by what the server
// means, not by the status class alone: Grafana Pyroscope answers /ingest
// with HTTP 422 while it shuts down or starts, its body saying
// "rpc error: code = Unavailable" (the distributor passes on the gRPC
// status of the component behind it), and its Connect API answers code
// "unknown" with the same text. The rules, in order (docs/agent-losses.md
// has them as a table):
//
//  1. a gRPC status in the error text ("code = NAME", the innermost when
//     several are nested: the cause) decides by its code;
//  2. else a Connect error's code decides (the "code" of a JSON body, or
//     the code the Connect client read);
//  3. else the HTTP status: 408, 425, 429 and 5xx are retried, every other
//     4xx is a refusal, and anything else is retried.
//
// A code decides like this: Unavailable, ResourceExhausted,
// DeadlineExceeded, Aborted, Canceled and Internal are retried (the
// server could not take the window now); InvalidArgument,
// FailedPrecondition, OutOfRange, PermissionDenied, Unauthenticated,
// NotFound, Unimplemented and AlreadyExists are refusals; Unknown and
// anything else do not decide, and the next rule applies.

// codeVerdict says whether a code (a gRPC name such as "ResourceExhausted"
// or a Connect name such as "resource_exhausted") is retried; decided is
// false when the code says nothing either way.
func codeVerdict(code string) (retry, decided bool) {
	switch strings.ToLower(strings.ReplaceAll(code, "_", "")) {
	case "unavailable", "resourceexhausted", "deadlineexceeded", "aborted", "canceled", "cancelled", "internal":
		return true, true
	case "invalidargument", "failedprecondition", "outofrange", "permissiondenied", "unauthenticated",
		"notfound", "unimplemented", "alreadyexists":
		return false, true
	}
	return false, false
}

// grpcCode matches a gRPC status as its Error method prints it.
var grpcCode = regexp.MustCompile(`code = ([A-Za-z]+)`)

// textVerdict applies rule 1 to an error text.
func textVerdict(text string) (retry, decided bool) {
	m := grpcCode.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return false, false
	}
	return codeVerdict(m[len(m)-1][1])
}

// retryableCode applies rules 1 and 2 to an RPC error's code and message;
// an undecided error is retried.
func retryableCode(code, msg string) bool {
	if r, ok := textVerdict(msg); ok {
		return r
	}
	if r, ok := codeVerdict(code); ok {
		return r
	}
	return true
}

// retryableHTTP applies the three rules to a non-2xx HTTP answer and its
// body (its first bytes).
func retryableHTTP(status int, body []byte) bool {
	if r, ok := textVerdict(string(body)); ok {
		return r
	}
	var ce struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &ce) == nil {
		if r, ok := codeVerdict(ce.Code); ok {
			return r
		}
	}
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests, status >= 500:
		return true
	case status >= 400:
		return false
	}
	return true
}
