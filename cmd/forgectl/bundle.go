package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/forgedaemon/forged/bundle/hub"
	"github.com/forgedaemon/forged/bundle/store"
	"github.com/forgedaemon/forged/internal/cli"
	"github.com/forgedaemon/forged/internal/units"
	"github.com/spf13/cobra"
)

// storeFlags are the flags every bundle command shares.
type storeFlags struct {
	data, endpoint string
	partSize       int64
	streams        int
}

func addDataFlag(c *cobra.Command, f *storeFlags) {
	c.Flags().StringVar(&f.data, "data", "", "data directory (default $FORGE_DATA or the platform default)")
}

func addEndpointFlag(c *cobra.Command, f *storeFlags) {
	c.Flags().StringVar(&f.endpoint, "endpoint", "", "hub endpoint (default $HF_ENDPOINT or "+hub.DefaultEndpoint+")")
	c.Flags().Int64Var(&f.partSize, "part-size", 0, "resume checkpoint interval in bytes (tests)")
	c.Flags().MarkHidden("part-size")
	c.Flags().IntVar(&f.streams, "streams", 1, "parallel ranged requests per large file (raise for CDNs that cap each connection)")
}

// open opens the store, creating it if needed (pull, update apply); with
// network it attaches a hub client unless FORGE_OFFLINE is set, in which
// case nothing touches the network.
func (f *storeFlags) open(network bool) (*store.Store, error) {
	return f.openStore(store.Open, network)
}

// openExisting opens the store only if there is one: commands that read a
// store never create it.
func (f *storeFlags) openExisting(network bool) (*store.Store, error) {
	return f.openStore(store.OpenExisting, network)
}

func (f *storeFlags) openStore(open func(string) (*store.Store, error), network bool) (*store.Store, error) {
	s, err := open(store.DataDir(f.data))
	if err != nil {
		return nil, err
	}
	if network && !store.Offline() {
		c := hub.New(hub.EndpointFromEnv(f.endpoint), hub.TokenFromEnv())
		if f.partSize > 0 {
			c.PartSize = f.partSize
		}
		if f.streams > 0 {
			c.Streams = f.streams
		}
		s.Client = c
	}
	return s, nil
}

func newBundleCmd() *cobra.Command {
	c := &cobra.Command{Use: "bundle", Short: "Inspect the local bundle store"}
	list := &cobra.Command{
		Use:   "list",
		Short: "List installed repositories, their snapshots and the served revision",
		Args:  cobra.NoArgs,
	}
	var f storeFlags
	addDataFlag(list, &f)
	asJSON := cli.JSONFlag(list)
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		s, err := f.openExisting(false)
		if err != nil {
			return err
		}
		repos, err := s.List()
		if err != nil {
			return err
		}
		if *asJSON {
			return cli.WriteJSON(cmd.OutOrStdout(), repos)
		}
		w := cmd.OutOrStdout()
		if len(repos) == 0 {
			fmt.Fprintf(w, "no bundles in %s\n", s.Root)
		}
		for _, r := range repos {
			fmt.Fprintf(w, "%s\n", r.Repo)
			for _, sn := range r.Snapshots {
				mark := "  "
				switch sn.Commit {
				case r.Current:
					mark = "* "
				case r.Previous:
					mark = "- "
				}
				fmt.Fprintf(w, "  %s%s  %4d files  %s\n", mark, sn.Commit, sn.Files, units.Bytes(sn.Bytes))
			}
		}
		return nil
	}
	c.AddCommand(list)
	return c
}

// progressBar renders pull events as a live one-line bar on a terminal.
type progressBar struct {
	w               io.Writer
	start, lastDraw time.Time
	done, total     int64
	active          []string
	lastLen         int
}

func newProgressBar(w io.Writer) *progressBar { return &progressBar{w: w, start: time.Now()} }

func (p *progressBar) event(e store.Event) {
	switch e.Kind {
	case "plan":
		p.total, p.start = e.Total, time.Now()
		p.line(e.Message)
	case "progress":
		p.done, p.active = e.Done, e.Active
		if time.Since(p.lastDraw) > 100*time.Millisecond || p.done == p.total {
			p.draw()
		}
	case "lock_wait", "retry", "verify", "resolved":
		msg := e.Message
		switch e.Kind {
		case "verify":
			msg = fmt.Sprintf("verifying %d files", e.Files)
		case "resolved":
			msg = strings.TrimSpace(e.Repo + " resolved to " + e.Commit)
		case "retry":
			msg = e.Path + ": " + e.Message
		}
		p.line(msg)
	}
}

func (p *progressBar) line(msg string) {
	fmt.Fprintf(p.w, "\r%*s\r%s\n", p.lastLen, "", msg)
	p.lastLen = 0
}

func (p *progressBar) draw() {
	p.lastDraw = time.Now()
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = float64(p.done) / float64(p.total)
	}
	filled := int(frac * width)
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if i < filled {
			bar[i] = '#'
		}
	}
	elapsed := time.Since(p.start).Seconds()
	rate := float64(p.done) / max(elapsed, 1e-3)
	eta := "--"
	if rate > 0 && p.total > p.done {
		eta = (time.Duration(float64(p.total-p.done)/rate) * time.Second).String()
	}
	cur := ""
	if len(p.active) > 0 {
		cur = p.active[0]
		if len(p.active) > 1 {
			cur += fmt.Sprintf(" (+%d)", len(p.active)-1)
		}
		if len(cur) > 40 {
			cur = "…" + cur[len(cur)-39:]
		}
	}
	s := fmt.Sprintf("[%s] %s/%s %s/s ETA %s %s", bar, units.Bytes(p.done), units.Bytes(p.total), units.Bytes(int64(rate)), eta, cur)
	pad := max(p.lastLen-len(s), 0)
	fmt.Fprintf(p.w, "\r%s%*s", s, pad, "")
	p.lastLen = len(s)
}
