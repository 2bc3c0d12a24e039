package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/forgedaemon/forged/client"
	"github.com/forgedaemon/forged/client/wire"
)

// floodCounts is what the flood opened and how its requests ended.
type floodCounts struct {
	Conns, ConnRefused        int
	Sessions, SessionRefused  int
	Streams, StreamRefused    int
	GenWorkers                int
	GenOK, GenBusy, GenFailed int64
	FirstRefusals             []string
}

// flood is the first uid: connections up to --conns (each with its own app
// name), sessions on them until refused (or the reported caps), subscribe
// streams up to --streams each, and per_uid workers sending generations
// back to back, until stdin closes.
func flood(f flags) error {
	capSessConn, capSessUID, capPerUID := f.capSessConn, f.capSessUID, f.capPerUID
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	var n floodCounts
	refused := func(what string, err error) {
		if len(n.FirstRefusals) < 6 {
			n.FirstRefusals = append(n.FirstRefusals, what+": "+err.Error())
		}
	}
	var conns []*client.Client
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range f.conns {
		c, err := client.Dial(ctx, f.socket, client.Options{Name: fmt.Sprintf("flood%d", i)})
		if err != nil {
			n.ConnRefused++
			refused("connection", err)
			if n.ConnRefused >= 8 {
				break // the cap is reached: more tries only repeat it
			}
			continue
		}
		conns = append(conns, c)
	}
	n.Conns = len(conns)
	if n.Conns == 0 {
		return errors.New("the flood could not open any connection")
	}
sessions:
	for _, c := range conns {
		for i := range capSessConn + 1 { // one past the cap: the refusal is counted
			if n.Sessions >= capSessUID+1 {
				break sessions
			}
			if _, err := c.OpenSession(ctx); err != nil {
				n.SessionRefused++
				refused("session", err)
				if i == 0 {
					break sessions // refused on a fresh connection: the uid's cap
				}
				break
			}
			n.Sessions++
		}
	}
	var streamWG sync.WaitGroup
	var streamsOK, streamsRefused atomic.Int64
	for _, c := range conns {
		for range f.streams {
			streamWG.Add(1)
			go func() {
				first := true
				for _, err := range c.Subscribe(ctx) {
					if first {
						if err != nil {
							streamsRefused.Add(1)
						} else {
							streamsOK.Add(1)
						}
						streamWG.Done()
						first = false
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}
	streamWG.Wait()
	n.Streams, n.StreamRefused = int(streamsOK.Load()), int(streamsRefused.Load())

	stop := make(chan struct{})
	var genWG sync.WaitGroup
	var ok, busy, failed atomic.Int64
	if f.genTokens > 0 {
		n.GenWorkers = min(capPerUID+1, len(conns)) // one past the uid's cap
		for w := range n.GenWorkers {
			genWG.Add(1)
			go func() {
				defer genWG.Done()
				for {
					select {
					case <-stop:
						return
					case <-ctx.Done():
						return
					default:
					}
					_, err := conns[w].Generate(ctx, probeArgs(uint64(f.genTokens), wire.PriorityInteractive)).Result()
					var we *wire.Error
					switch {
					case err == nil:
						ok.Add(1)
					case errors.As(err, &we) && we.Code == wire.CodeBusy:
						busy.Add(1)
					default:
						failed.Add(1)
					}
				}
			}()
		}
	}
	ready, _ := json.Marshal(n)
	fmt.Println("READY", string(ready))
	io.Copy(io.Discard, os.Stdin)
	close(stop)
	genWG.Wait()
	n.GenOK, n.GenBusy, n.GenFailed = ok.Load(), busy.Load(), failed.Load()
	done, _ := json.Marshal(struct{ GenOK, GenBusy, GenFailed int64 }{n.GenOK, n.GenBusy, n.GenFailed})
	fmt.Println("DONE", string(done))
	return nil
}
