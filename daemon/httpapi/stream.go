package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/forgedaemon/forged/client/wire"
)

// stream writes a server-sent event stream: "data: {chunk}" per event,
// each flushed at once, then "data: [DONE]". The status line is written
// with the first event, so an error before it (validation, busy, context
// exceeded) is an ordinary error response; one after it is an error event.
type stream struct {
	w            http.ResponseWriter // a timedWriter: each write has the write timeout
	rc           *http.ResponseController
	includeUsage bool
	started      bool
}

func (a *API) newStream(w http.ResponseWriter, includeUsage bool) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), includeUsage: includeUsage}
}

func (s *stream) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

// write sends one event and flushes it (with any held one).
func (s *stream) write(data []byte) error {
	if err := s.hold(data); err != nil {
		return err
	}
	return s.rc.Flush()
}

// hold writes an event without flushing it: it leaves with the next one
// (the role chunk with the first token's, so the first token costs one
// flush, not two).
func (s *stream) hold(data []byte) error {
	s.start()
	_, err := s.w.Write(append(append([]byte("data: "), data...), '\n', '\n'))
	return err
}

func (s *stream) send(base completion, c choice) error {
	base.Choices = []choice{c}
	return s.writeChunk(base, nil, s.write)
}

// sendHeld is send without the flush.
func (s *stream) sendHeld(base completion, c choice) error {
	base.Choices = []choice{c}
	return s.writeChunk(base, nil, s.hold)
}

func (s *stream) writeChunk(base completion, u *usage, write func([]byte) error) error {
	var v any = base
	if s.includeUsage {
		v = chunk{completion: base, Usage: u}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return write(data)
}

// end sends the last choice, the usage chunk if asked for, and [DONE].
func (s *stream) end(base completion, last choice, u wire.Usage) {
	if s.send(base, last) != nil {
		return
	}
	if s.includeUsage {
		base.Choices = []choice{}
		if s.writeChunk(base, usageOf(u), s.write) != nil {
			return
		}
	}
	s.write([]byte("[DONE]"))
}

// fail reports an error: as the response before the stream started, as an
// error event after.
func (s *stream) fail(e *apiError) {
	if !s.started {
		writeError(s.w, e)
		return
	}
	data, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	s.write(data)
}
