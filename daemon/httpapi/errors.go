package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/forgedaemon/forged/client/wire"
)

// apiError is an OpenAI error object with its HTTP status
// (https://platform.openai.com/docs/guides/error-codes).
type apiError struct {
	status     int
	Message    string  `json:"message"`
	Type       string  `json:"type"`
	Param      *string `json:"param"`
	Code       *string `json:"code"`
	retryAfter int     // seconds; 0: no Retry-After header
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badField is a 400 invalid_request_error naming the request field.
func badField(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Param: strp(param),
		Message: param + ": " + fmt.Sprintf(format, args...)}
}

// unsupported is a 400 for a field this build accepts but cannot honour.
func unsupported(param, what string) *apiError {
	e := badField(param, "%s is not supported by this build", what)
	e.Code = strp("unsupported")
	return e
}

// argPath finds the field a daemon bad_request names ("chat: args.stop[0]
// is empty" names stop[0]).
var argPath = regexp.MustCompile(`\bargs\.([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)*)`)

// fromDaemon maps a daemon error (docs/PROTOCOL.md §3 codes) to its HTTP
// status and OpenAI error: context_exceeded is context_length_exceeded on
// param, busy is 429 with Retry-After, unavailable 503.
func fromDaemon(err error, param string) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var we *wire.Error
	if !errors.As(err, &we) {
		return &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: err.Error(), Code: strp(wire.CodeInternal)}
	}
	e := &apiError{Message: we.Message, Code: strp(we.Code)}
	switch we.Code {
	case wire.CodeBadRequest:
		e.status, e.Type = http.StatusBadRequest, "invalid_request_error"
		if m := argPath.FindStringSubmatch(we.Message); m != nil {
			e.Param = strp(httpParam(m[1]))
		}
	case wire.CodeContextExceeded:
		e.status, e.Type, e.Param, e.Code = http.StatusBadRequest, "invalid_request_error", strp(param), strp("context_length_exceeded")
	case wire.CodeTooLarge:
		e.status, e.Type = http.StatusRequestEntityTooLarge, "invalid_request_error"
	case wire.CodeUnauthorized:
		e.status, e.Type = http.StatusForbidden, "permission_error"
	case wire.CodeNotFound:
		e.status, e.Type = http.StatusNotFound, "not_found_error"
	case wire.CodeBusy:
		e.status, e.Type, e.retryAfter = http.StatusTooManyRequests, "rate_limit_error", 1
	case wire.CodeUnavailable:
		e.status, e.Type = http.StatusServiceUnavailable, "server_error"
	case wire.CodeCancelled:
		e.status, e.Type = 499, "invalid_request_error" // nginx's "client closed request": nobody reads it
	default:
		e.status, e.Type = http.StatusInternalServerError, "server_error"
	}
	return e
}

// httpParam names a daemon argument as the HTTP request field it came
// from (the daemon's format is the request's response_format).
func httpParam(arg string) string {
	if arg == "format" || strings.HasPrefix(arg, "format.") {
		return "response_format"
	}
	return arg
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	writeJSON(w, e.status, struct {
		Error *apiError `json:"error"`
	}{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":"internal"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// refuseWriteTimeout bounds the one response a refused connection gets.
const refuseWriteTimeout = time.Second

// RefuseConn answers a connection the daemon's connection caps refused
// (transport.Listener.Capped) with err as an OpenAI error (busy: 429 with
// Retry-After) before it is closed; its request is never read.
func RefuseConn(c net.Conn, err error) {
	e := fromDaemon(err, "")
	body, merr := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	if merr != nil {
		return
	}
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n",
		e.status, http.StatusText(e.status), len(body))
	if e.retryAfter > 0 {
		head += fmt.Sprintf("Retry-After: %d\r\n", e.retryAfter)
	}
	c.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	c.Write(append([]byte(head+"\r\n"), body...))
}
